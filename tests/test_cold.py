"""The cold path: the command line imports no heavy library, and the numpy sentence forward
gives the embeddings of a padded transformers forward (the reference, test extra only) within
1e-6."""

import subprocess
import sys

import numpy as np
import pytest

from workbench.common.encoders import SentenceEncoder, get_encoder
from workbench.dsgc.protocols import Protocol, scenarios_for

HEAVY = ("altair", "torch", "transformers", "distributed", "dask", "sentence_transformers")


def _imported_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_command_line_imports_no_heavy_library():
    assert _imported_after("import workbench.cli") == []


@pytest.mark.sentence
def test_the_sentence_encoder_never_imports_torch():
    code = (
        "from workbench.common.encoders import SentenceEncoder\nSentenceEncoder().encode(['a b c'])"
    )
    assert _imported_after(code) == []


ODD = [
    "",
    "x",
    "Ünïcödé façade — naïve café: 東京 ✓ 🙂",
    "word " * 400,  # past 256 tokens: truncated the same way
    "  spaces   and\ttabs\nnewlines  ",
]


def transformers_reference(path: str, texts: list[str], batch: int = 128) -> np.ndarray:
    """The model's pipeline as transformers runs it: BertModel on padded batches (torch), mean
    pooling over the attention mask, rows normalized. Written here, not in the package: it is
    the yardstick, never a path the workbench takes."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), 384))
    with torch.inference_mode():
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            enc = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=256,
                      return_tensors="pt")  # fmt: skip
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            out[idx] = ((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)).numpy()
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.mark.sentence
@pytest.mark.slow
def test_the_numpy_forward_matches_transformers_within_1e_6(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scenarios = scenarios_for(Protocol.load("main").with_(seeds=(0, 2)))
    texts = sorted({t for s in scenarios for t in [s.query, *s.texts]}) + ODD
    enc = SentenceEncoder()
    fast = enc.encode(texts)
    ref = transformers_reference(enc.path(), texts)
    assert fast.shape == ref.shape == (len(texts), 384)
    assert np.abs(fast - ref).max() < 1e-6
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-12)


def test_the_cache_encodes_in_batches(monkeypatch):
    import workbench.common.encoders as E

    enc = E.CachedEncoder(E.LexicalEncoder(), None)
    calls = []
    base = enc.base.encode
    monkeypatch.setattr(enc.base, "encode", lambda texts: calls.append(len(texts)) or base(texts))
    monkeypatch.setattr(E, "BATCH", 7)
    texts = [f"text number {i}" for i in range(20)]
    out = enc.encode(texts + texts[:3])
    assert calls == [7, 7, 6] and enc.encoded == 20
    assert np.array_equal(out, get_encoder("lexical", cache_dir=False).encode(texts + texts[:3]))

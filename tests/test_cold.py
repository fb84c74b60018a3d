"""The cold path: the command line imports no heavy library, and the numpy sentence backend
gives the transformers backend's embeddings within 1e-6."""

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
def test_the_numpy_backend_never_imports_torch():
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


@pytest.mark.sentence
@pytest.mark.slow
def test_numpy_backend_matches_transformers_within_1e_6():
    scenarios = scenarios_for(Protocol.load("main").with_(seeds=(0, 2)))
    texts = sorted({t for s in scenarios for t in [s.query, *s.texts]}) + ODD
    fast = SentenceEncoder(backend="numpy").encode(texts)
    ref = SentenceEncoder(backend="transformers").encode(texts)
    assert fast.shape == ref.shape == (len(texts), 384)
    assert np.abs(fast - ref).max() < 1e-6
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-12)


def test_backends_keep_their_own_disk_cache(tmp_path):
    assert (
        SentenceEncoder(backend="numpy").cache_name
        != SentenceEncoder(backend="transformers").cache_name
    )
    with pytest.raises(ValueError, match="unknown sentence backend"):
        SentenceEncoder(backend="onnx")


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

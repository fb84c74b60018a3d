"""Encoders: the lexical encoder against its specification, the sentence encoder, the cache."""

import hashlib
import itertools

import numpy as np
import pytest

from workbench.common.encoders import (
    RECOMPUTE_BATCH,
    CachedEncoder,
    EncoderUnavailable,
    LexicalEncoder,
    SentenceEncoder,
    get_encoder,
    lexical_count_rows,
    tokenize,
)


def spec_counts(text):
    """The design's signed bucket counts, written independently of the implementation."""
    v = np.zeros(256)
    for tok in __import__("re").findall(r"[a-z0-9_]+", text.lower()):
        d = hashlib.sha256(tok.encode()).digest()
        v[int.from_bytes(d[:4], "big") % 256] += 1 if d[4] % 2 == 0 else -1
    return v


def spec_vector(text):
    """The design's definition, written independently of the implementation."""
    v = spec_counts(text)
    n = np.linalg.norm(v)
    return v / n if n else v


def test_tokenize():
    assert tokenize("May Alice's run_8841 DELETE it?") == [
        "may",
        "alice",
        "s",
        "run_8841",
        "delete",
        "it",
    ]
    # the specified runs (a regex over the lowercased text), also where bytes and characters part
    for text in ["job\x00_7\x00", "", "\x00", "run\ud800id \udfff", "\u212aEY \u0130D x\u03a3",
                 "straße_9", "\u01c5x \ufb01le", "tail_ _head"]:  # fmt: skip
        assert tokenize(text) == __import__("re").findall(r"[a-z0-9_]+", text.lower()), repr(text)


@pytest.mark.parametrize(
    "text",
    [
        "alice",
        "May Alice delete the encrypted backup?",
        "Bundle M maps to clearance N",
        "a a a b",
        "x_1 X_1 café",
    ],
)
def test_lexical_matches_specification(text):
    got = LexicalEncoder().encode([text])[0]
    np.testing.assert_allclose(got, spec_vector(text), atol=1e-12)
    assert abs(np.linalg.norm(got) - 1) < 1e-12


def test_lexical_fixed_tokens():
    # pinned from the specification: sha256("alice") and sha256("backup")
    for tok in ("alice", "backup"):
        d = hashlib.sha256(tok.encode()).digest()
        bucket, sign = int.from_bytes(d[:4], "big") % 256, (1 if d[4] % 2 == 0 else -1)
        v = LexicalEncoder().encode([tok])[0]
        assert v[bucket] == sign and np.count_nonzero(v) == 1
    # sha256("alice") = 2bd806c9 7f...: bucket 0x2bd806c9 % 256 = 201, byte 4 = 0x7f is odd -> -1
    v = LexicalEncoder().encode(["alice"])[0]
    assert v[201] == -1.0 and np.count_nonzero(v) == 1


def test_lexical_zero_vector_and_batch_shape():
    out = LexicalEncoder().encode(["!!! ...", "alice"])
    assert out.shape == (2, 256) and not out[0].any() and out[1].any()
    assert LexicalEncoder().encode([]).shape == (0, 256)


def test_a_batch_with_repeats_gives_each_row_as_alone_and_as_specified():
    # the batched encoder tokenizes each distinct text once and sums with one bincount: repeats,
    # blank texts, a text of no tokens and non-ASCII letters must not move a row's bits
    texts = ["job_7f3a ran", "", "job_7f3a ran", "!!!", "Straße café x_1", "a " * 300, "alice"] * 3
    batch = LexicalEncoder().encode(texts)
    for text, row in zip(texts, batch, strict=True):
        assert row.tobytes() == LexicalEncoder().encode([text])[0].tobytes()
        np.testing.assert_allclose(row, spec_vector(text), atol=1e-12)


def test_count_rows_are_the_specified_counts_whatever_the_batch():
    """The counts a batch sums per cell (its tokens sorted by cell, cancelling signs dropped)
    are each text's specified counts, also for repeats, texts of no tokens and signs that
    cancel to zero."""
    texts = ["alice backup alice", "", "!!!", "alice backup", "a " * 40 + "b", "alice backup"]
    # the batch is tokenized as one text: a NUL in a text (the join's separator), a lone
    # surrogate, characters whose lowercase is ASCII (KELVIN SIGN -> k, I WITH DOT ABOVE -> i +
    # a combining dot), a final sigma, texts ending and starting mid-token
    odd = ["job\x00_7\x00", "\x00", "run\ud800id \udfff", "\u212aEY \u0130D", "ΟΔΟΣ step\u03a3",
           "straße_9", "tail_", "_head", "\u01c5x \ufb01le"]  # fmt: skip
    for batch in (texts, texts + odd, odd, odd[::-1]):
        got = lexical_count_rows(batch)
        assert got.dtype == np.int64 and got.shape == (len(batch), 256)
        for text, row in zip(batch, got, strict=True):
            np.testing.assert_array_equal(row, spec_counts(text), err_msg=repr(text))
    assert lexical_count_rows([]).shape == (0, 256)
    assert lexical_count_rows(["\x00kelvin \u212a"])[0].tolist() == spec_counts("kelvin k").tolist()


@pytest.mark.parametrize("batch", [None, 16])
def test_a_batch_comes_back_in_an_array_of_its_own(batch, monkeypatch):
    """A batch's rows, gathered from the memo, come back in an array of their own with the base
    encoder's bytes: writing to it changes no cached row, also where the memo holds only a few
    (`hold`), and where the new texts went to the base encoder in several batches."""
    if batch is not None:  # the texts sent to the base encoder in several batches
        monkeypatch.setattr("workbench.common.encoders.BATCH", batch)
    distinct = [f"poll job_{i} now" for i in range(50)]
    # all new and distinct, and all new with repeats (a first call), each keyed either way
    for texts, held, by_text in itertools.product(
        (distinct, distinct + distinct[45:] + distinct[::7]), (None, 5), (False, True)
    ):
        enc = CachedEncoder(LexicalEncoder(), by_text=by_text)
        if held is not None:
            enc.hold(held)
        first = enc(texts)
        assert first.tobytes() == LexicalEncoder().encode(texts).tobytes()
        first[:] = 7.0
        again = enc(texts)
        assert again.tobytes() == LexicalEncoder().encode(texts).tobytes()
        assert enc.encoded == (50 if held is None else 95)  # (held: 45 dropped, encoded again)
        again[:] = 3.0
        assert enc(texts).tobytes() == LexicalEncoder().encode(texts).tobytes()


def test_a_memo_keyed_by_text_has_no_disk(tmp_path):
    """A memo keyed by the texts themselves keeps no disk cache (the disk's keys are digests)."""
    with pytest.raises(ValueError, match="by_text"):
        CachedEncoder(LexicalEncoder(), cache_dir=tmp_path, by_text=True)
    enc = CachedEncoder(LexicalEncoder(), by_text=True)
    enc(["x y", "y z"])
    assert enc.has_all(["y z"]) and not enc.has_all(["y z", "z"]) and enc.encoded == 2


def test_cache_encodes_each_unique_text_once(tmp_path):
    enc = CachedEncoder(LexicalEncoder(), cache_dir=tmp_path)
    a = enc(["x y", "y z", "x y"])
    assert enc.encoded == 2
    b = enc(["y z", "x y"])
    assert enc.encoded == 2
    np.testing.assert_array_equal(a[1], b[0])
    fresh = CachedEncoder(LexicalEncoder(), cache_dir=tmp_path)  # a new process, same disk
    c = fresh(["x y", "y z"])
    assert fresh.encoded == 0
    np.testing.assert_array_equal(c, b[::-1])


def test_unknown_encoder_and_missing_model():
    with pytest.raises(ValueError, match="unknown encoder"):
        get_encoder("bm25")
    with pytest.raises(EncoderUnavailable, match="not found"):
        SentenceEncoder(model_path="/nonexistent/model").encode(["hello"])


@pytest.mark.sentence
def test_sentence_encoder_offline_normalized():
    enc = get_encoder("sentence", cache_dir=None)
    out = enc(
        [
            "May Alice delete the encrypted backup?",
            "Alice may delete the backup.",
            "The cafeteria serves soup.",
        ]
    )
    assert out.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1, atol=1e-6)
    assert out[0] @ out[1] > out[0] @ out[2] + 0.3


@pytest.mark.sentence
def test_sentence_encoder_matches_sentence_transformers():
    """Our transformer -> mean pooling -> normalize equals the reference library's pipeline."""
    from sentence_transformers import SentenceTransformer

    texts = [
        "May Alice delete the encrypted backup?",
        "Bundle M maps to clearance N",
        "The cafeteria on floor three serves the autumn menu this week.",
        "ok",
    ]
    enc = SentenceEncoder()
    ref = SentenceTransformer(enc.path(), device="cpu", local_files_only=True)
    want = ref.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(enc.encode(texts), want, atol=2e-5)


def test_a_large_lexical_batch_skips_the_memo_and_gives_the_same_bytes():
    """A replayed log is one large batch: the lexical encoder (cheaper to run than to memoize)
    encodes it without keeping a row per text, with the bytes the memoized path gives."""
    texts = [f"poll job_{i:05x} for the churn model, step {i % 7}" for i in range(RECOMPUTE_BATCH)]
    big = CachedEncoder(LexicalEncoder())
    whole = big.encode(texts)
    assert big.encoded == len(texts) and len(big) == 0  # encoded, not kept
    small = CachedEncoder(LexicalEncoder())
    parts = np.concatenate([small.encode(texts[i : i + 500]) for i in range(0, len(texts), 500)])
    assert len(small) == len(set(texts))  # the small batches are memoized
    assert whole.tobytes() == parts.tobytes()

"""Seeds: the one seed-range grammar, the one seeded numpy generator factory (`rng`) and the
counter-based seeded draws (`Draw`).

A seed range is written `A:B` (half-open: seeds A, A+1, ..., B-1) or `N` (meaning `0:N`),
on the command line, in protocols and in notebook parameters alike.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence

import numpy as np


def parse_seeds(value) -> tuple[int, int]:
    """A seed range as (A, B), half-open: from 'A:B', 'N' (= 0:N), an int N, (A, B) or a range."""
    if isinstance(value, range):
        if value.step != 1:
            raise ValueError(f"seed range {value!r} must have step 1")
        lo, hi = value.start, value.stop
    elif isinstance(value, tuple | list) and len(value) == 2:
        lo, hi = value
    elif isinstance(value, int) and not isinstance(value, bool):
        lo, hi = 0, value
    elif isinstance(value, str):
        text = value.strip()
        try:
            if ":" in text:
                a, b = text.split(":", 1)
                lo, hi = int(a), int(b)
            else:
                lo, hi = 0, int(text)
        except ValueError:
            raise ValueError(f"bad seed range {value!r}; expected A:B (half-open) or N") from None
    else:
        raise ValueError(f"bad seed range {value!r}; expected A:B (half-open) or N")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi)):
        raise ValueError(f"bad seed range {value!r}; seeds are integers")
    if lo < 0:
        raise ValueError(f"bad seed range {value!r}: seeds are at least 0")
    if hi <= lo:
        raise ValueError(f"empty seed range {value!r}: B must be greater than A")
    return lo, hi


def seed_range(value) -> range:
    """The seeds of a range, as a `range` (same grammar as `parse_seeds`)."""
    lo, hi = parse_seeds(value)
    return range(lo, hi)


def format_seeds(lo: int, hi: int) -> str:
    """(A, B) back as 'A:B'."""
    return f"{lo}:{hi}"


def stream_tag(name: str) -> int:
    """A stable integer for a named random stream (crc32; never Python's salted hash())."""
    return zlib.crc32(name.encode("utf-8"))


def rng(seed: int, *stream) -> np.random.Generator:
    """The numpy generator of one stream under a seed: PCG64 keyed by [seed, *stream], a name in
    the stream by its `stream_tag`, a number as itself. Every seeded numpy draw in the workbench
    is made here, so a stream's key says what it is for, and adding a stream changes no other."""
    key = [seed, *(stream_tag(x) if isinstance(x, str) else int(x) for x in stream)]
    return np.random.default_rng(key)


class Draw:
    """A counter-based deterministic random source (SHA-256 of key and counter), independent of
    Python's `random` and numpy's generators, so a key gives the same draws everywhere."""

    def __init__(self, *key):
        self.key = "/".join(str(k) for k in key)
        self.counter = 0

    def below(self, n: int) -> int:
        digest = hashlib.sha256(f"{self.key}#{self.counter}".encode()).digest()
        self.counter += 1
        return int.from_bytes(digest[:8], "big") % n

    def choice(self, items: Sequence):
        return items[self.below(len(items))]

    def sample(self, items: Sequence, k: int) -> list:
        pool = list(items)
        out = []
        for _ in range(k):
            out.append(pool.pop(self.below(len(pool))))
        return out

    def shuffle(self, items: Sequence) -> list:
        out = list(items)
        for i in range(len(out) - 1, 0, -1):  # Fisher-Yates
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out

    def code(self, letters: str = "ABCDEFGHJKLMNPQRSTUVWXYZ", digits: int = 2) -> str:
        return self.choice(letters) + "".join(str(self.below(10)) for _ in range(digits))

    def __repr__(self) -> str:
        return f"Draw({self.key!r}, counter={self.counter})"


_GOLDEN, _M1, _M2 = (
    np.uint64(x) for x in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
)


class Stream:
    """Vectorized counter-based draws for large arrays: splitmix64(key + (counter + 1) * golden),
    the key the first 8 bytes of SHA-256 of the "/"-joined key parts (numpy integer arithmetic,
    so a key gives the same draws on every machine and numpy version)."""

    def __init__(self, *key):
        text = "/".join(str(k) for k in key)
        self.key = np.uint64(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))
        self.counter = 0

    def u64(self, size: int) -> np.ndarray:
        with np.errstate(over="ignore"):
            x = (
                self.key
                + np.arange(self.counter + 1, self.counter + size + 1, dtype=np.uint64) * _GOLDEN
            )
            x = (x ^ (x >> np.uint64(30))) * _M1
            x = (x ^ (x >> np.uint64(27))) * _M2
        self.counter += size
        return x ^ (x >> np.uint64(31))

    def below(self, n, size: int) -> np.ndarray:
        """size draws in [0, n) (64-bit value mod n, as Draw.below)."""
        return (self.u64(size) % np.asarray(n, dtype=np.uint64)).astype(np.int64)


def seeds_arg(text: str) -> range:
    """An argparse `type` for seed ranges (same grammar as `parse_seeds`)."""
    import argparse

    try:
        return seed_range(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None

"""Seeds: the one seed-range grammar and the counter-based seeded draws.

A seed range is written `A:B` (half-open: seeds A, A+1, ..., B-1) or `N` (meaning `0:N`),
on the command line, in protocols and in notebook parameters alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


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


def seeds_arg(text: str) -> range:
    """An argparse `type` for seed ranges (same grammar as `parse_seeds`)."""
    import argparse

    try:
        return seed_range(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None

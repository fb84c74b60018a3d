"""The large store's layout: chains of the generator's four templates, each with fresh entities,
among honeypots and fillers, drawn as arrays (frames and slot pieces per block) from
counter-based streams, then rendered to text and to LexicalEncoder's rows.

Every text is a frame with slots whose edges are token boundaries, so a block's lexical counts are
the sum of its pieces' counts: pieces are hashed once, blocks are summed with numpy, and time is
linear in N.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

import numpy as np

from workbench.common.encoders import LEXICAL_DIM, lexical_counts, normalize_counts
from workbench.common.seeds import Stream
from workbench.dsgc import generator as G
from workbench.dsgc.generator import (
    FILLER_FRAMES,
    FILLER_SLOTS,
    MACHINES,
    PROJECTS,
    SERVICES,
    USERS,
)


def _stream(*key) -> Stream:
    """A named draw stream of the store format (its key namespace is part of the format)."""
    return Stream("workbench-store-v1", *key)


# --- pieces and frames ------------------------------------------------------------------------


class Pieces:
    """Interned text pieces with their lexical count vectors (int16, one row per piece)."""

    def __init__(self):
        self.index: dict[str, int] = {}
        self.text: list[str] = []
        self._rows: list[np.ndarray] = []
        self._vectors = np.zeros((0, LEXICAL_DIM), dtype=np.int16)

    @property
    def vectors(self) -> np.ndarray:
        """(pieces, 256) int16 counts."""
        if len(self._vectors) != len(self._rows):
            self._vectors = np.stack(self._rows)
        return self._vectors

    def add(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.text)
            self.text.append(text)
            self._rows.append(lexical_counts(text).astype(np.int16))
        return i

    def pool(self, values) -> np.ndarray:
        return np.array([self.add(v) for v in values], dtype=np.int64)


PIECES = Pieces()
EMPTY = PIECES.add("")  # the piece of an unused slot
_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_]")


@dataclass(frozen=True)
class Frame:
    """A format string split into literal pieces and named slots whose edges are token
    boundaries (so counts add up piece by piece)."""

    fmt: str
    literals: tuple[int, ...]  # piece ids, one more than slots
    slots: tuple[str, ...]

    @classmethod
    def compile(cls, fmt: str) -> Frame:
        lits, slots = [], []
        for lit, name, _, _ in string.Formatter().parse(fmt):
            lits.append(lit)
            if name is not None:
                slots.append(name)
        if len(lits) == len(slots):
            lits.append("")
        for i, name in enumerate(slots):
            before, after = lits[i], lits[i + 1]
            if (before and _TOKEN_CHAR.match(before[-1])) or (
                after and _TOKEN_CHAR.match(after[0])
            ):
                raise ValueError(f"slot {{{name}}} of {fmt!r} touches a word character")
        return cls(fmt, tuple(PIECES.add(x) for x in lits), tuple(slots))


# entity pools: compound identifiers ("K-0421", "ledger-17") keep 10^5 chains apart while only
# about 10^4 pieces are ever hashed
LAST = ("Novak", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Reyes", "Kowalski", "Haddad",
        "Brennan", "Castillo", "Dubois", "Eriksen", "Fontaine", "Gallo", "Horvat", "Ivanova")  # fmt: skip
POOLS = {
    "person": PIECES.pool(f"{a} {b}" for a in USERS for b in LAST),
    "service": PIECES.pool(SERVICES),
    "project": PIECES.pool(PROJECTS),
    "machine": PIECES.pool(MACHINES),
    "letter": PIECES.pool("ABCDEFGHJKLMNPQRSTUVWXYZ"),
    "num2": PIECES.pool(f"{k:02d}" for k in range(100)),
    "num4": PIECES.pool(f"{k:04d}" for k in range(10_000)),
    "clearance": PIECES.pool(f"{c}{k}" for c in "NPRSTVW" for k in range(10)),
    "dollars": PIECES.pool(str(500 * k) for k in range(2, 40)),
    "kpa": PIECES.pool(str(10 * k) for k in range(5, 40)),
    "allows": PIECES.pool(("allows", "allows", "allows", "forbids")),
    "may": PIECES.pool(("may", "may", "may", "may not")),
    **{f"filler_{k}": PIECES.pool(v) for k, v in FILLER_SLOTS.items()},
}


@dataclass(frozen=True)
class BigTemplate:
    """One template of the large store: query, chain (c1 first), honeypot frames, slot pools."""

    name: str
    regime: str
    query: Frame
    chain: tuple[Frame, ...]
    honeypots: tuple[Frame, ...]
    n_honeypots: int
    slots: dict  # slot -> (pool, slot whose value it must differ from, or None)


# How the store draws each of the generator's slots: a slot becomes a frame of the store's own
# slots (compound identifiers such as "K-0421" are a letter piece and a number piece), each drawn
# from a pool, or from the pool but different from another slot's value. The sentences are the
# generator's (`generator.FRAMES`: query, chain, medium-tier honeypots).
STORE_SLOTS = {
    "expense": (
        {"proj": "{project}-{pn}", "other": "{project}-{other}", "other_budget": "{budget}",
         "threshold": "{limit}", "other_threshold": "{limit}"},
        {"project": ("project", None), "pn": ("num2", None), "other": ("num2", "pn"),
         "amount": ("dollars", None), "limit": ("dollars", None), "budget": ("dollars", None)},
    ),
    "threshold": (
        {"unit": "{machine} {ul}-{un}", "other": "{machine} {ul}-{other}",
         "other_limit": "{limit}", "other_reading": "{reading}"},
        {"machine": ("machine", None), "ul": ("letter", None), "un": ("num4", None),
         "other": ("num4", "un"), "limit": ("kpa", None), "reading": ("kpa", None)},
    ),
    "role": (
        {"bundle": "{bl}-{bn}", "clearance": "{clear}"},
        {"user": ("person", None), "bl": ("letter", None), "bn": ("num4", None),
         "clear": ("clearance", None), "verb": ("allows", None)},
    ),
    "profile": (
        {"svc": "{service}-{sn}", "ticket": "RT-{tn}", "relay": "{rl}-{rn}"},
        {"service": ("service", None), "sn": ("num2", None), "tn": ("num4", None),
         "rl": ("letter", None), "rn": ("num4", None), "verb": ("may", None)},
    ),
}  # fmt: skip
# the honeypot frames in the order the store draws them (fixed with workbench-store/1: the
# threshold store lists the generator's last two medium frames the other way round)
HONEYPOT_ORDER = {"threshold": (0, 1, 2, 3, 5, 4)}


class _Keep(dict):
    """format_map values that leave a slot the map does not name as it is: {slot}."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _template(name: str) -> BigTemplate:
    """The generator's template `name`, compiled for the store."""
    spec, frames = G.TEMPLATES[name], G.FRAMES[name]
    rename, slots = STORE_SLOTS[name]

    def frame(text: str) -> Frame:
        return Frame.compile(text.format_map(_Keep(rename)))

    pool = frames.pools["medium"]
    pool = tuple(pool[i] for i in HONEYPOT_ORDER.get(name, range(len(pool))))
    return BigTemplate(
        name,
        spec.regime,
        frame(frames.query),
        tuple(map(frame, frames.chain)),
        tuple(map(frame, pool)),
        spec.honeypots,
        slots,
    )


STORE_TEMPLATES = {name: _template(name) for name in G.TEMPLATES}
FILLERS = tuple(Frame.compile(f) for f in FILLER_FRAMES)
STORE_FRAMES: list[Frame] = [
    f for t in STORE_TEMPLATES.values() for f in (t.query, *t.chain, *t.honeypots)
]
STORE_FRAMES += FILLERS
FRAME_ID = {f.fmt: i for i, f in enumerate(STORE_FRAMES)}
MAX_SLOTS = max(len(f.slots) for f in STORE_FRAMES)
_FRAME_VEC = np.stack(
    [PIECES.vectors[list(f.literals)].sum(0, dtype=np.int16) for f in STORE_FRAMES]
)


# --- generation -------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Layout:
    """A store before rendering: per block (pre-shuffle) a frame, slot pieces and a name; the
    store order; the edges (store positions) and the queries."""

    n: int
    seed: int
    frame: np.ndarray  # (N,) frame index
    slots: np.ndarray  # (N, MAX_SLOTS) piece ids (EMPTY where unused)
    kind: np.ndarray  # (N,) 0 chain, 1 honeypot, 2 filler
    template: np.ndarray  # (N,) index into STORE_TEMPLATES (fillers: -1)
    instance: np.ndarray  # (N,) the chain instance (fillers: their own number)
    link: np.ndarray  # (N,) which chain link or honeypot of its instance
    order: np.ndarray  # order[k] = pre-shuffle index of the block at store position k
    edges: np.ndarray  # (E, 2) store positions, [dependent, prerequisite]
    queries: list  # (id, template, frame, slot pieces, chain pre-shuffle indices)

    def names(self, idx) -> list[str]:
        """Block ids of pre-shuffle indices: role12.c1, role12.h2, f345."""
        out = []
        tnames = list(STORE_TEMPLATES)
        for t, i, k, kind in zip(
            self.template[idx].tolist(),
            self.instance[idx].tolist(),
            self.link[idx].tolist(),
            self.kind[idx].tolist(),
            strict=True,
        ):
            out.append(f"f{i + 1}" if kind == 2 else f"{tnames[t]}{i}{_MARK[kind]}{k + 1}")
        return out

    def __repr__(self) -> str:
        return f"Layout({self.n} blocks, {len(self.queries)} chains, {len(self.edges)} edges)"


_MARK = (".c", ".h")


def counts_per_template(n_blocks: int, per_chain: int = 20) -> dict[str, int]:
    """How many chain instances of each template: one per `per_chain` blocks, round-robin."""
    n_inst = max(1, n_blocks // per_chain)
    names = list(STORE_TEMPLATES)
    return {t: n_inst // 4 + (1 if i < n_inst % 4 else 0) for i, t in enumerate(names)}


def layout(n_blocks: int, seed: int = 0, per_chain: int = 20, extra_edges: int = 0) -> Layout:
    """Draw a store of n_blocks: chains of every template (their honeypots beside them), fillers,
    a store order, the chains' edges and `extra_edges` spurious ones (any block depending on a
    non-chain block), all from counter-based streams of (n_blocks, seed)."""
    counts = counts_per_template(n_blocks, per_chain)
    used = sum(
        c * (len(STORE_TEMPLATES[t].chain) + STORE_TEMPLATES[t].n_honeypots)
        for t, c in counts.items()
    )
    if used > n_blocks:
        raise ValueError(f"{n_blocks} blocks cannot hold the chains and honeypots ({used})")
    frames, slot_rows, edges_pre, queries = [], [], [], []
    kinds, tmpl, inst_no, links = [], [], [], []
    start = 0
    for t_i, (tname, n) in enumerate(counts.items()):
        if n == 0:
            continue
        t, s = STORE_TEMPLATES[tname], _stream(n_blocks, seed, tname)
        value = {}
        for slot, (pool, differ) in t.slots.items():
            size = len(POOLS[pool])
            if differ is None:
                value[slot] = s.below(size, n)
            else:  # a different value from the same pool: shift by 1 .. size-1
                value[slot] = (value[differ] + 1 + s.below(size - 1, n)) % size
        piece = {k: POOLS[t.slots[k][0]][v] for k, v in value.items()}

        def fill(frame: Frame, rows: np.ndarray, piece=piece) -> np.ndarray:
            out = np.full((len(rows), MAX_SLOTS), EMPTY)
            for j, slot in enumerate(frame.slots):
                out[:, j] = piece[slot][rows]
            return out

        inst = np.arange(n)
        for k, frame in enumerate(t.chain):
            frames.append(np.full(n, FRAME_ID[frame.fmt]))
            slot_rows.append(fill(frame, inst))
            kinds.append(np.zeros(n, dtype=np.int8))
            tmpl.append(np.full(n, t_i, dtype=np.int8))
            inst_no.append(inst)
            links.append(np.full(n, k, dtype=np.int8))
        for k in range(len(t.chain) - 1):  # c(k+1) depends on c(k)
            edges_pre.append(np.stack([start + (k + 1) * n + inst, start + k * n + inst], 1))
        pick = np.argsort(s.u64(n * len(t.honeypots)).reshape(n, -1), axis=1, kind="stable")
        for j in range(t.n_honeypots):
            col = pick[:, j]
            fr = np.array([FRAME_ID[t.honeypots[c].fmt] for c in range(len(t.honeypots))])[col]
            rows = np.full((n, MAX_SLOTS), EMPTY)
            for c, frame in enumerate(t.honeypots):
                m = col == c
                if m.any():
                    rows[m] = fill(frame, np.flatnonzero(m))
            frames.append(fr)
            slot_rows.append(rows)
            kinds.append(np.ones(n, dtype=np.int8))
            tmpl.append(np.full(n, t_i, dtype=np.int8))
            inst_no.append(inst)
            links.append(np.full(n, j, dtype=np.int8))
        qslots = fill(t.query, inst)
        depth = len(t.chain)
        for i in range(n):
            chain = [start + k * n + i for k in range(depth)]
            queries.append((f"{tname}{i}", tname, FRAME_ID[t.query.fmt], qslots[i], chain))
        start += (depth + t.n_honeypots) * n
    n_fill = n_blocks - start
    s = _stream(n_blocks, seed, "filler")
    which = s.below(len(FILLERS), n_fill)
    fill_rows = np.full((n_fill, MAX_SLOTS), EMPTY)
    draws = {k: POOLS[f"filler_{k}"][s.below(len(v), n_fill)] for k, v in FILLER_SLOTS.items()}
    for c, frame in enumerate(FILLERS):
        m = which == c
        for j, slot in enumerate(frame.slots):
            fill_rows[m, j] = draws[slot][m]
    frames.append(np.array([FRAME_ID[FILLERS[c].fmt] for c in range(len(FILLERS))])[which])
    slot_rows.append(fill_rows)
    kinds.append(np.full(n_fill, 2, dtype=np.int8))
    tmpl.append(np.full(n_fill, -1, dtype=np.int8))
    inst_no.append(np.arange(n_fill))
    links.append(np.zeros(n_fill, dtype=np.int8))
    order = np.argsort(_stream(n_blocks, seed, "order").u64(n_blocks), kind="stable")
    where = np.empty(n_blocks, dtype=np.int64)
    where[order] = np.arange(n_blocks)
    edges = where[np.concatenate(edges_pre)] if edges_pre else np.zeros((0, 2), np.int64)
    kind = np.concatenate(kinds)
    if extra_edges:
        edges = np.concatenate([edges, _spurious(n_blocks, seed, extra_edges, where[kind != 0])])
    return Layout(
        n_blocks,
        seed,
        np.concatenate(frames),
        np.concatenate(slot_rows),
        kind,
        np.concatenate(tmpl),
        np.concatenate(inst_no),
        np.concatenate(links),
        order,
        edges,
        queries,
    )


def _spurious(n: int, seed: int, m: int, prerequisites: np.ndarray) -> np.ndarray:
    """m distinct edges (no self-loops): a random block depends on a random non-chain block."""
    s = _stream(n, seed, "spurious-edges")
    dep = s.below(n, m)
    pre = prerequisites[s.below(len(prerequisites), m)]
    keep = dep != pre
    code = np.unique(dep[keep] * n + pre[keep])  # drop repeats; sorted, so deterministic
    return np.stack([code // n, code % n], 1)


# --- rendering and writing --------------------------------------------------------------------


def render(frames: np.ndarray, slots: np.ndarray) -> list[str]:
    """The texts of blocks given their frames and slot pieces, frame by frame."""
    out = [""] * len(frames)
    text = PIECES.text
    for f in np.unique(frames).tolist():
        rows = np.flatnonzero(frames == f)
        frame = STORE_FRAMES[f]
        lits = [text[i] for i in frame.literals]
        cols = [[text[p] for p in slots[rows, j].tolist()] for j in range(len(frame.slots))]
        parts = [""] * (2 * len(cols) + 1)
        parts[0::2] = lits
        for r, values in zip(
            rows.tolist(), zip(*cols, strict=True) if cols else [()] * len(rows), strict=True
        ):
            parts[1::2] = values
            out[r] = "".join(parts)
    return out


def _slot_entries() -> tuple[np.ndarray, np.ndarray]:
    """(buckets, counts) of the nonzero entries of every piece a slot can hold, padded with
    zeros to the widest such piece (two or three entries: slot values are short)."""
    vec = PIECES.vectors
    slot_pieces = np.unique(np.concatenate([*POOLS.values(), [EMPTY]]))
    width = max(int((vec[slot_pieces] != 0).sum(1).max()), 1)
    cols = np.argsort(vec == 0, axis=1, kind="stable")[:, :width]  # nonzero buckets first
    return cols, np.take_along_axis(vec, cols, axis=1)


_SLOT_COLS, _SLOT_VALS = _slot_entries()


def lexical_rows(frames: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """LexicalEncoder's rows, bit for bit, from frames and slot pieces (float32).

    A row's counts are its frame's (one gather) plus its slot pieces' few nonzero entries,
    normalized as the encoder normalizes them.
    """
    counts = _FRAME_VEC[frames]
    at = np.arange(len(frames))
    for j in range(slots.shape[1]):
        for k in range(_SLOT_COLS.shape[1]):  # one (row, bucket) pair per row: no repeats
            counts[at, _SLOT_COLS[slots[:, j], k]] += _SLOT_VALS[slots[:, j], k]
    return normalize_counts(counts, np.float32)

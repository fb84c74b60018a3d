"""Large stores: N blocks (10^2 .. 10^6) holding many chains of the four templates, each with
fresh entities, among honeypots and fillers, in one store that every chain's query retains from.

A store is a folder:
- `store.jsonl` (format `workbench-store/1`, written and read line by line): a header line, then
  one line per block in store order, one per edge (`[dependent, prerequisite]`), one per query;
- `lexical.npy` (float32, N x 256, exactly LexicalEncoder's rows) and `lexical.queries.npy`,
  written chunk by chunk and read memory-mapped; `embed_store` adds `sentence.npy` the same way.

Draws are a counter-based hash (splitmix64 of a SHA-256 stream key plus a counter) in numpy
integer arithmetic: a seed gives the same bytes on every machine and numpy version, and no
draw depends on numpy's generators. Every text is a frame with slots whose edges are token
boundaries, so a block's lexical counts are the sum of its pieces' counts: pieces are hashed
once, blocks are summed with numpy, and time is linear in N.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import string
import time
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _json_str
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.common.encoders import LEXICAL_DIM, get_encoder, tokenize
from workbench.common.io import InputError, UniqueIds, atomic_path, read_jsonl
from workbench.common.sweep import chunks, run_tasks
from workbench.dsgc.generator import (
    FILLER_FRAMES,
    FILLER_SLOTS,
    MACHINES,
    PROJECTS,
    SERVICES,
    USERS,
)
from workbench.dsgc.policies import make_policy
from workbench.dsgc.scenario import Block, Scenario

FORMAT = "workbench-store/1"
CHUNK = 1 << 16  # blocks per write chunk: memory stays flat whatever N is


class StoreError(InputError):
    """A store file is malformed."""


# --- counter-based draws -----------------------------------------------------------------------

_GOLDEN, _M1, _M2 = (
    np.uint64(x) for x in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)
)


class Stream:
    """Draws of one named stream: splitmix64(key + (counter + 1) * golden), vectorized."""

    def __init__(self, *key):
        text = "/".join(str(k) for k in ("workbench-store-v1", *key))
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
        """size draws in [0, n) (64-bit value mod n, as seeds.Draw.below)."""
        return (self.u64(size) % np.asarray(n, dtype=np.uint64)).astype(np.int64)


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
            row = np.zeros(LEXICAL_DIM, dtype=np.int16)
            for tok in tokenize(text):
                digest = hashlib.sha256(tok.encode("utf-8")).digest()  # LexicalEncoder's rule
                row[int.from_bytes(digest[:4], "big") % LEXICAL_DIM] += (
                    1 if digest[4] % 2 == 0 else -1
                )
            i = self.index[text] = len(self.text)
            self.text.append(text)
            self._rows.append(row)
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


def _template(name, regime, query, chain, honeypots, n_honeypots, slots) -> BigTemplate:
    return BigTemplate(
        name,
        regime,
        Frame.compile(query),
        tuple(map(Frame.compile, chain)),
        tuple(map(Frame.compile, honeypots)),
        n_honeypots,
        slots,
    )


TEMPLATES = {
    t.name: t
    for t in (
        _template(
            "expense", "control",
            "Can project {project}-{pn} approve an expense of {amount} dollars?",
            ("Project {project}-{pn} can approve any expense up to {limit} dollars without escalation.",
             "Project {project}-{pn} has {budget} dollars of budget remaining this quarter."),
            ("Project {project}-{other} has {budget} dollars of budget remaining.",
             "An expense above the approval threshold needs a director.",
             "Project {project}-{other} can approve expenses up to {limit} dollars.",
             "Expense approvals are logged in the finance portal.",
             "Each project can approve small expenses without escalation.",
             "Budget remaining is reported in dollars at quarter end."),
            4,
            {"project": ("project", None), "pn": ("num2", None), "other": ("num2", "pn"),
             "amount": ("dollars", None), "limit": ("dollars", None), "budget": ("dollars", None)},
        ),
        _template(
            "threshold", "control",
            "Is the pressure on {machine} {ul}-{un} above its limit?",
            ("The pressure limit for {machine} {ul}-{un} is {limit} kilopascals.",
             "The latest pressure reading on {machine} {ul}-{un} is {reading} kilopascals."),
            ("The pressure limit for {machine} {ul}-{other} is {limit} kilopascals.",
             "The latest pressure reading on {machine} {ul}-{other} is {reading} kilopascals.",
             "A reading above the pressure limit triggers an alarm.",
             "Pressure limits are reviewed by the plant engineer each quarter.",
             "Limits are stated in kilopascals on the control screen.",
             "Every {machine} logs its pressure reading hourly."),
            4,
            {"machine": ("machine", None), "ul": ("letter", None), "un": ("num4", None),
             "other": ("num4", "un"), "limit": ("kpa", None), "reading": ("kpa", None)},
        ),
        _template(
            "role", "target",
            "May {user} delete the encrypted production backup?",
            ("{user} was placed in access bundle {bl}-{bn} for production backup work.",
             "Bundle {bl}-{bn} maps onto clearance level {clear} in our access directory.",
             "Clearance {clear} {verb} deleting the encrypted production backup."),
            ("Deleting an encrypted production backup needs a second reviewer.",
             "Only operators may delete a production backup at night.",
             "The encrypted production backup is kept for one year.",
             "Requests to delete an encrypted backup cite a ticket."),
            2,
            {"user": ("person", None), "bl": ("letter", None), "bn": ("num4", None),
             "clear": ("clearance", None), "verb": ("allows", None)},
        ),
        _template(
            "profile", "target",
            "May the {service}-{sn} service send telemetry directly?",
            ("{service}-{sn} is filed under change ticket RT-{tn}.",
             "Change ticket RT-{tn} names relay profile {rl}-{rn} as its sole owner.",
             "Relay profile {rl}-{rn} {verb} send telemetry directly to the vendor."),
            ("A service may send telemetry directly after a privacy review.",
             "Staging services may not send telemetry directly.",
             "Telemetry a service sends directly is sampled heavily.",
             "May a new service send telemetry directly? Ask security."),
            2,
            {"service": ("service", None), "sn": ("num2", None), "tn": ("num4", None),
             "rl": ("letter", None), "rn": ("num4", None), "verb": ("may", None)},
        ),
    )
}  # fmt: skip
FILLERS = tuple(Frame.compile(f) for f in FILLER_FRAMES)
FRAMES: list[Frame] = [f for t in TEMPLATES.values() for f in (t.query, *t.chain, *t.honeypots)]
FRAMES += FILLERS
FRAME_ID = {f.fmt: i for i, f in enumerate(FRAMES)}
MAX_SLOTS = max(len(f.slots) for f in FRAMES)
_FRAME_VEC = np.stack([PIECES.vectors[list(f.literals)].sum(0, dtype=np.int16) for f in FRAMES])


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
    template: np.ndarray  # (N,) index into TEMPLATES (fillers: -1)
    instance: np.ndarray  # (N,) the chain instance (fillers: their own number)
    link: np.ndarray  # (N,) which chain link or honeypot of its instance
    order: np.ndarray  # order[k] = pre-shuffle index of the block at store position k
    edges: np.ndarray  # (E, 2) store positions, [dependent, prerequisite]
    queries: list  # (id, template, frame, slot pieces, chain pre-shuffle indices)

    def names(self, idx) -> list[str]:
        """Block ids of pre-shuffle indices: role12.c1, role12.h2, f345."""
        out = []
        tnames = list(TEMPLATES)
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


KINDS = ("chain", "honeypot", "filler")
_MARK = (".c", ".h")


def counts_per_template(n_blocks: int, per_chain: int = 20) -> dict[str, int]:
    """How many chain instances of each template: one per `per_chain` blocks, round-robin."""
    n_inst = max(1, n_blocks // per_chain)
    names = list(TEMPLATES)
    return {t: n_inst // 4 + (1 if i < n_inst % 4 else 0) for i, t in enumerate(names)}


def layout(n_blocks: int, seed: int = 0, per_chain: int = 20, extra_edges: int = 0) -> Layout:
    """Draw a store of n_blocks: chains of every template (their honeypots beside them), fillers,
    a store order, the chains' edges and `extra_edges` spurious ones (any block depending on a
    non-chain block), all from counter-based streams of (n_blocks, seed)."""
    counts = counts_per_template(n_blocks, per_chain)
    used = sum(c * (len(TEMPLATES[t].chain) + TEMPLATES[t].n_honeypots) for t, c in counts.items())
    if used > n_blocks:
        raise ValueError(f"{n_blocks} blocks cannot hold the chains and honeypots ({used})")
    frames, slot_rows, edges_pre, queries = [], [], [], []
    kinds, tmpl, inst_no, links = [], [], [], []
    start = 0
    for t_i, (tname, n) in enumerate(counts.items()):
        if n == 0:
            continue
        t, s = TEMPLATES[tname], Stream(n_blocks, seed, tname)
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
    s = Stream(n_blocks, seed, "filler")
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
    order = np.argsort(Stream(n_blocks, seed, "order").u64(n_blocks), kind="stable")
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
    s = Stream(n, seed, "spurious-edges")
    dep = s.below(n, m)
    pre = prerequisites[s.below(len(prerequisites), m)]
    keep = dep != pre
    code = np.unique(dep[keep] * n + pre[keep])  # drop repeats; sorted, so deterministic
    return np.stack([code // n, code % n], 1)


# --- rendering and writing --------------------------------------------------------------------


def _render(frames: np.ndarray, slots: np.ndarray) -> list[str]:
    """The texts of blocks given their frames and slot pieces, frame by frame."""
    out = [""] * len(frames)
    text = PIECES.text
    for f in np.unique(frames).tolist():
        rows = np.flatnonzero(frames == f)
        frame = FRAMES[f]
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

    A row's counts are its frame's (one gather) plus its slot pieces' few nonzero entries;
    counts are small integers, so the squared norm is exact and the division below is the
    encoder's float64 division, done only where a count is nonzero, then cast.
    """
    counts = _FRAME_VEC[frames]
    at = np.arange(len(frames))
    for j in range(slots.shape[1]):
        for k in range(_SLOT_COLS.shape[1]):  # one (row, bucket) pair per row: no repeats
            counts[at, _SLOT_COLS[slots[:, j], k]] += _SLOT_VALS[slots[:, j], k]
    flat = np.flatnonzero(counts)
    r = flat // LEXICAL_DIM  # the row of each nonzero count
    v = counts.ravel()[flat].astype(np.float64)
    norms = np.sqrt(np.bincount(r, weights=v * v, minlength=len(frames)))
    out = np.zeros(counts.shape, dtype=np.float32)
    out.ravel()[flat] = v / norms[r]
    return out


def write_store(lay: Layout, out_dir, chunk: int = CHUNK) -> Path:
    """store.jsonl, lexical.npy and lexical.queries.npy in `out_dir`, streamed chunk by chunk;
    each file appears whole or not at all."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n = lay.n
    head = {
        "format": FORMAT,
        "id": f"store/seed={lay.seed}/blocks={n}",
        "seed": lay.seed,
        "blocks": n,
        "edges": len(lay.edges),
        "queries": len(lay.queries),
    }
    with (
        atomic_path(out / "lexical.npy", suffix=".npy") as npy,
        atomic_path(out / "store.jsonl") as jsonl,
    ):
        emb = np.lib.format.open_memmap(npy, mode="w+", dtype=np.float32, shape=(n, LEXICAL_DIM))
        with open(jsonl, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(json.dumps(head) + "\n")
            for a, b in chunks(0, n, chunk):
                idx = lay.order[a:b]
                fr, sl = lay.frame[idx], lay.slots[idx]
                texts = _render(fr, sl)
                names, kinds = lay.names(idx), lay.kind[idx].tolist()
                fh.write(
                    "".join(
                        f'{{"block": {_json_str(i)}, "text": {_json_str(t)}, "kind": "{KINDS[k]}"}}\n'
                        for i, t, k in zip(names, texts, kinds, strict=True)
                    )
                )
                emb[a:b] = lexical_rows(fr, sl)
            at = lay.order  # pre-shuffle index at each store position
            for a, b in chunks(0, len(lay.edges), chunk):
                deps = lay.names(at[lay.edges[a:b, 0]])
                pres = lay.names(at[lay.edges[a:b, 1]])
                fh.write(
                    "".join(
                        f'{{"edge": [{_json_str(d)}, {_json_str(p)}]}}\n'
                        for d, p in zip(deps, pres, strict=True)
                    )
                )
            qframes = np.array([q[2] for q in lay.queries], dtype=np.int64)
            qslots = np.array([q[3] for q in lay.queries], dtype=np.int64).reshape(-1, MAX_SLOTS)
            links = [c for q in lay.queries for c in q[4]]
            names = iter(map(_json_str, lay.names(np.array(links, dtype=np.int64))))
            lines = []
            for (qid, tname, _, _, chain), text in zip(
                lay.queries, _render(qframes, qslots), strict=True
            ):
                ids = ", ".join(next(names) for _ in chain)
                lines.append(
                    f'{{"query": {_json_str(text)}, "id": {_json_str(qid)}, "template": "{tname}", '
                    f'"regime": "{TEMPLATES[tname].regime}", "chain": [{ids}]}}\n'
                )
            fh.write("".join(lines))
        emb.flush()
        del emb
        qrows = lexical_rows(qframes, qslots)
        with atomic_path(out / "lexical.queries.npy", suffix=".npy") as qnpy:
            np.save(qnpy, qrows)
    return out


def generate_store(
    n_blocks: int, out_dir, seed: int = 0, per_chain: int = 20, extra_edges: int = 0
) -> Path:
    """Draw and write a store of n_blocks (see `layout` and `write_store`)."""
    return write_store(layout(n_blocks, seed, per_chain, extra_edges), out_dir)


# --- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Store:
    """A store read back: ids, texts, kinds, costs and edges in store order, and the queries."""

    path: Path
    header: dict
    ids: list
    texts: list
    kinds: list
    costs: np.ndarray
    edges: np.ndarray  # (E, 2) store positions
    queries: pd.DataFrame  # id, query, template, regime, chain (ids), chain_pos (positions)

    def embeddings(self, encoder: str = "lexical") -> tuple[np.ndarray, np.ndarray]:
        """(blocks, queries) rows of an encoder, memory-mapped from the .npy files."""
        blocks = np.load(self.path / f"{encoder}.npy", mmap_mode="r")
        queries = np.load(self.path / f"{encoder}.queries.npy", mmap_mode="r")
        if blocks.shape[0] != len(self.ids) or queries.shape[0] != len(self.queries):
            raise StoreError(f"{encoder}.npy does not match the store's blocks", path=self.path)
        return blocks, queries

    def scenario(self, query_id: str) -> Scenario:
        """One query over the whole store in the scenario format (validated like any other)."""
        q = self.queries.set_index("id").loc[query_id]
        blocks = tuple(
            Block(i, t, k) for i, t, k in zip(self.ids, self.texts, self.kinds, strict=True)
        )
        edges = tuple((self.ids[d], self.ids[p]) for d, p in self.edges.tolist())
        return Scenario(
            f"{self.header['id']}/{query_id}", q["query"], blocks, edges, tuple(q["chain"]),
            q["template"], q["regime"], self.header.get("seed"),
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"Store({self.header['id']}, {len(self.ids)} blocks, {len(self.edges)} edges, {len(self.queries)} queries)"


def read_store(path) -> Store:
    """Read store.jsonl line by line, checking it as strictly as a scenario file (unique ids,
    edges and chains naming known blocks, the header's counts); errors name file, line, field."""
    folder = Path(path)
    file = folder / "store.jsonl" if folder.is_dir() else folder
    folder = file.parent
    rows = read_jsonl(file, StoreError)
    try:
        _, head = next(rows)
    except StopIteration:
        raise StoreError("empty store file", path=file) from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise StoreError(
            f"the first line must be a {FORMAT} header", path=file, line=1, field="format"
        )
    ids, texts, kinds, edges, queries = [], [], [], [], []
    seen = UniqueIds("block", StoreError, file)
    qids = UniqueIds("query", StoreError, file)
    for line, obj in rows:
        if not isinstance(obj, dict):
            raise StoreError("expected a JSON object", path=file, line=line)
        if "block" in obj:
            if queries or edges:
                raise StoreError("blocks come before edges and queries", path=file, line=line)
            for key in ("block", "text"):
                if not isinstance(obj.get(key), str) or not obj[key].strip():
                    raise StoreError("must be a non-empty string", path=file, line=line, field=key)
            seen.add(obj["block"], line, "block")
            ids.append(obj["block"])
            texts.append(obj["text"])
            kinds.append(obj.get("kind", "filler"))
        elif "edge" in obj:
            e = obj["edge"]
            if not (isinstance(e, list) and len(e) == 2 and all(x in seen.seen for x in e)):
                raise StoreError(
                    "must be a [dependent, prerequisite] pair of known block ids",
                    path=file,
                    line=line,
                    field="edge",
                )
            if e[0] == e[1]:
                raise StoreError(f"self-loop on {e[0]!r}", path=file, line=line, field="edge")
            edges.append(e)
        elif "query" in obj:
            for key in ("query", "id"):
                if not isinstance(obj.get(key), str) or not obj[key].strip():
                    raise StoreError("must be a non-empty string", path=file, line=line, field=key)
            chain = obj.get("chain")
            if not isinstance(chain, list) or not chain or not all(c in seen.seen for c in chain):
                raise StoreError(
                    "must be a non-empty list of known block ids",
                    path=file,
                    line=line,
                    field="chain",
                )
            qids.add(obj["id"], line)
            queries.append(obj)
        else:
            raise StoreError("expected a block, edge or query line", path=file, line=line)
    for key, got in (("blocks", len(ids)), ("edges", len(edges)), ("queries", len(queries))):
        if head.get(key) != got:
            raise StoreError(
                f"header says {head.get(key)} {key}, the file holds {got}",
                path=file,
                line=1,
                field=key,
            )
    pos = {b: i for i, b in enumerate(ids)}
    edge_pos = np.array([[pos[d], pos[p]] for d, p in edges], dtype=np.int64).reshape(-1, 2)
    qdf = pd.DataFrame(
        {
            "id": [q["id"] for q in queries],
            "query": [q["query"] for q in queries],
            "template": [q.get("template", "") for q in queries],
            "regime": [q.get("regime", "") for q in queries],
            "chain": [tuple(q["chain"]) for q in queries],
        }
    )
    qdf["chain_pos"] = [np.array([pos[c] for c in ch], dtype=np.int64) for ch in qdf["chain"]]
    costs = np.fromiter((max(len(t.split()), 1) for t in texts), dtype=np.int64, count=len(texts))
    return Store(folder, head, ids, texts, kinds, costs, edge_pos, qdf)


# --- other encoders ----------------------------------------------------------------------------


def embed_store(store: Store, encoder: str = "sentence", progress: bool = True) -> Path:
    """<encoder>.npy and <encoder>.queries.npy beside the store: every unique text encoded once
    through the (cached, batched) encoder, rows written in store order as float32."""
    enc = get_encoder(encoder)
    unique = sorted(set(store.texts) | set(store.queries["query"]))
    vecs = enc.encode(unique, progress=progress)
    row = {t: i for i, t in enumerate(unique)}
    for name, texts in (
        (f"{encoder}.npy", store.texts),
        (f"{encoder}.queries.npy", list(store.queries["query"])),
    ):
        with atomic_path(store.path / name, suffix=".npy") as tmp:
            out = np.lib.format.open_memmap(
                tmp, mode="w+", dtype=np.float32, shape=(len(texts), enc.dim)
            )
            for a, b in chunks(0, len(texts), CHUNK):
                out[a:b] = vecs[[row[t] for t in texts[a:b]]]
            out.flush()
            del out
    return store.path / f"{encoder}.npy"


# --- retention over a store ---------------------------------------------------------------------


def _retention_task(
    folder: str, encoder: str, template: str, lo: int, hi: int, params: dict
) -> tuple[list[dict], float]:
    """Rows for the queries [lo, hi) of one template (the store's edges, costs and embeddings,
    memory-mapped, under each policy) and the task's own seconds."""
    t0 = time.perf_counter()
    store = _cached_store(folder)
    emb, qemb = store.embeddings(encoder)
    qs = store.queries[store.queries.template == template].iloc[lo:hi]
    rows = []
    for qi, q in zip(qs.index.tolist(), qs.itertuples(index=False), strict=True):
        chain = q.chain_pos
        mass = int(store.costs[chain].sum())
        budget = max(mass, math.ceil(params["multiplier"] * mass - 1e-9))
        for pol in params["policies"]:
            ret = make_policy(pol)(emb, qemb[qi], store.edges, store.costs, budget)
            kept = ret.kept[chain]
            rows.append(
                {
                    "blocks": len(store.ids),
                    "encoder": encoder,
                    "template": template,
                    "regime": q.regime,
                    "query": q.id,
                    "policy": pol,
                    "budget": budget,
                    "full_chain_retained": bool(kept.all()),
                    "c1_retained": bool(kept[0]),
                    "c1_rank": int(ret.rank_of(chain[:1])[0]),
                    "last_rank": int(ret.rank_of(chain[-1:])[0]),  # the query-facing link
                }
            )
    return rows, time.perf_counter() - t0


_STORES: dict[str, Store] = {}


def _cached_store(folder: str) -> Store:
    """A worker reads each store once and keeps it (and its memory maps) for its next tasks."""
    if folder not in _STORES:
        _STORES.clear()
        _STORES[folder] = read_store(folder)
    return _STORES[folder]


def store_retention(
    folder,
    encoder: str = "lexical",
    templates: Sequence[str] = tuple(TEMPLATES),
    queries: int = 100,
    policies: Sequence[str] = ("similarity", "dsgc"),
    multiplier: float = 2.0,
    chunk: int = 25,
    scheduler=None,
    progress: bool = False,
) -> pd.DataFrame:
    """Each of the first `queries` chains of each template queried over the whole store, under
    each policy with budget C = max(L, ceil(M L)); split by (template, query chunk), in-process
    or on Dask, rows in a fixed order."""
    folder = str(Path(folder).resolve())
    store = _cached_store(folder)
    params = {"policies": tuple(policies), "multiplier": float(multiplier)}
    tasks = []
    for t in templates:
        n = min(queries, int((store.queries.template == t).sum()))
        tasks += [(folder, encoder, t, a, b) for a, b in chunks(0, n, chunk)]
    parts = run_tasks(_retention_task, tasks, scheduler, params, progress)
    out = pd.DataFrame([r for rows, _ in parts for r in rows])
    out.attrs["task_seconds"] = [sec for _, sec in parts]  # per task, in task order
    return out


def retention_study(
    ns: Sequence[int],
    encoders: Sequence[str],
    folder,
    seed: int = 0,
    queries: int = 100,
    scheduler=None,
    progress: bool = False,
    templates: Sequence[str] = tuple(TEMPLATES),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Retention as the store grows: a store per N (made once in `folder`), each encoder's
    rows beside it, then `store_retention`. Returns (rows, per-task costs)."""
    rows, costs = [], []
    for n in ns:
        d = Path(folder) / f"blocks{n}-seed{seed}"
        if not (d / "store.jsonl").exists():
            generate_store(n, d, seed)
        for enc in encoders:
            if not (d / f"{enc}.npy").exists():
                embed_store(read_store(d), enc, progress)
            df = store_retention(d, enc, templates, queries, scheduler=scheduler, progress=progress)
            rows.append(df)
            per_task = len(df) // max(len(df.attrs["task_seconds"]), 1)
            costs += [
                {"blocks": n, "encoder": enc, "task": i, "rows": per_task, "seconds": sec}
                for i, sec in enumerate(df.attrs["task_seconds"])
            ]
    return pd.concat(rows, ignore_index=True), pd.DataFrame(costs)


def retention_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (blocks, encoder, regime, template, policy): queries, full-chain and c1 retention,
    median ranks of c1 (the first link, which a similarity ranking loses on the targets) and
    of the last link (the one that names the query's decision)."""
    g = rows.groupby(["blocks", "encoder", "regime", "template", "policy"], sort=False)
    return g.agg(
        queries=("query", "count"),
        full_chain=("full_chain_retained", "mean"),
        c1_kept=("c1_retained", "mean"),
        c1_median_rank=("c1_rank", "median"),
        last_median_rank=("last_rank", "median"),
    ).reset_index()

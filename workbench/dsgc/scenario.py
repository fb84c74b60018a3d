"""Blocks, scenarios and the JSONL scenario file format (one scenario a line)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache
from importlib.resources import files

import numpy as np

from workbench.common.encoders import token_cost
from workbench.common.io import InputError, UniqueIds, atomic_write_text, read_jsonl

KINDS = ("chain", "honeypot", "filler")  # the kinds a page colours (any other label is allowed)
CONFIDENCE = "edge_confidence"  # optional: one number in (0, 1] per edge, in edge order
KNOWN = frozenset(
    {"id", "template", "regime", "seed", "query", "answer", "blocks", "edges", "chain"}
)


def budget_for(mass, multiplier: float):
    """The paper's budget C = max(L, ceil(M * L)) for a chain mass L (or an array of them)."""
    return np.maximum(mass, np.ceil(multiplier * np.asarray(mass) - 1e-9)).astype(np.int64)


class ScenarioError(InputError):
    """A scenario (or a scenario file) is malformed."""


@dataclass(frozen=True)
class Block:
    """One memory block: an atomic proposition kept or evicted whole.

    Its token cost is the `cost` a scenario file gives for it (another tool's tokenizer, say),
    or, when none is given, the paper's word count `max(len(text.split()), 1)`.
    """

    id: str
    text: str
    kind: str = "filler"
    declared_cost: int | None = None  # the file's "cost" field, when it has one

    @property
    def cost(self) -> int:
        return token_cost(self.text) if self.declared_cost is None else self.declared_cost

    def __repr__(self) -> str:
        short = self.text if len(self.text) <= 48 else self.text[:45] + "..."
        return f"Block({self.id!r}, {self.kind}, {short!r})"


@dataclass(frozen=True)
class Scenario:
    """A query, a store of blocks in ingestion order, prerequisite edges and the labelled chain."""

    id: str
    query: str
    blocks: tuple[Block, ...]
    edges: tuple[tuple[str, str], ...]  # (dependent, prerequisite)
    chain: tuple[str, ...]
    template: str = ""
    regime: str = ""
    seed: int | None = None
    answer: str | None = None
    metadata: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        _validate(self)

    def __repr__(self) -> str:
        return (
            f"Scenario({self.id!r}, {self.regime or '?'}, {len(self.blocks)} blocks, "
            f"chain={list(self.chain)}, {len(self.edges)} edges)"
        )

    # --- derived views (cheap, computed on demand) ---
    @property
    def ids(self) -> list[str]:
        return [b.id for b in self.blocks]

    @property
    def texts(self) -> list[str]:
        return [b.text for b in self.blocks]

    @property
    def kinds(self) -> list[str]:
        return [b.kind for b in self.blocks]

    @property
    def costs(self) -> np.ndarray:
        return np.array([b.cost for b in self.blocks], dtype=np.int64)

    def index(self) -> dict[str, int]:
        return {b.id: i for i, b in enumerate(self.blocks)}

    @property
    def confidence(self) -> tuple[float, ...] | None:
        """Each edge's confidence in (0, 1] (`edge_confidence`, given by an inducer), or None:
        every edge certain (the paper's graph)."""
        c = self.metadata.get(CONFIDENCE)
        return None if c is None else tuple(float(x) for x in c)

    def edge_index(self) -> np.ndarray:
        """Edges as a (|E|, 2) int array of store positions: column 0 dependent, column 1
        prerequisite; with edge confidences, a (|E|, 3) float array whose column 2 is each edge's
        confidence (DSGC weights its support by it)."""
        pos = self.index()
        if not self.edges:
            return np.zeros((0, 2), dtype=np.int64)
        idx = np.array([[pos[d], pos[p]] for d, p in self.edges], dtype=np.int64)
        conf = self.confidence
        if conf is None:
            return idx
        return np.column_stack([idx.astype(np.float64), np.asarray(conf, dtype=np.float64)])

    def chain_mask(self) -> np.ndarray:
        chain = set(self.chain)
        return np.array([b.id in chain for b in self.blocks], dtype=bool)

    def chain_mass(self) -> int:
        """L: the token mass of the chain."""
        pos = self.index()
        return int(sum(self.blocks[pos[c]].cost for c in self.chain))

    def budget(self, multiplier: float) -> int:
        """C = max(L, ceil(M * L))."""
        return int(budget_for(self.chain_mass(), multiplier))

    def block(self, block_id: str) -> Block:
        return self.blocks[self.index()[block_id]]

    def with_edges(
        self, edges: Iterable[tuple[str, str]], confidence: Iterable[float] | None = None
    ) -> Scenario:
        """The same scenario with another edge set (for imperfect-graph studies), with a
        confidence per edge if given (else none: every edge certain)."""
        edges = tuple(tuple(e) for e in edges)
        meta = {k: v for k, v in self.metadata.items() if k != CONFIDENCE}
        if confidence is not None:
            meta[CONFIDENCE] = [float(c) for c in confidence]
        out = replace(self, edges=edges, metadata=meta)
        if confidence is not None:
            _validate(out)
        return out

    def to_dict(self) -> dict:
        out = {
            "id": self.id,
            "template": self.template,
            "regime": self.regime,
            "seed": self.seed,
            "query": self.query,
            "answer": self.answer,
            "blocks": [_block_dict(b) for b in self.blocks],
            "edges": [list(e) for e in self.edges],
            "chain": list(self.chain),
        }
        for k in sorted(self.metadata):
            out[k] = self.metadata[k]
        return out

    @classmethod
    def from_dict(cls, obj: dict, *, path: str | None = None, line: int | None = None) -> Scenario:
        """A scenario from one parsed line, validated against the scenario JSON Schema (the
        format's one statement), then the checks a schema cannot express (`_validate`)."""
        problem = schema_problem(obj)
        if problem is not None:
            raise ScenarioError(problem[0], path=path, line=line, field=problem[1])
        blocks = [Block(b["id"], b["text"], b.get("kind", "filler"), b.get("cost"))
                  for b in obj["blocks"]]  # fmt: skip
        edges = obj.get("edges", [])  # absent: no edges (edges stripped for `workbench induce`)
        chain = obj["chain"]
        seed = obj.get("seed")
        answer = obj.get("answer")
        meta = {k: v for k, v in obj.items() if k not in KNOWN}
        try:
            return cls(
                obj["id"],
                obj["query"],
                tuple(blocks),
                tuple((d, p) for d, p in edges),
                tuple(chain),
                obj.get("template") or "",
                obj.get("regime") or "",
                seed,
                answer,
                meta,
            )
        except ScenarioError as e:
            raise ScenarioError(e.message, path=path, line=line, field=e.field) from None


# --- the format's one statement: its JSON Schema -----------------------------------------------

SCHEMA = "scenario.schema.json"  # workbench/common/data/schemas/
_TYPES = {"string": "a string", "integer": "an integer", "number": "a number", "null": "null",
          "array": "a list", "object": "an object", "boolean": "true or false"}  # fmt: skip


@cache
def _validator():
    import jsonschema  # (its import costs ~0.1 s: paid by the first file read, not the CLI)

    schema = json.loads(files("workbench.common").joinpath("data/schemas", SCHEMA).read_text())
    return jsonschema.Draft202012Validator(schema)


def _field(parts) -> str | None:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or None


def schema_problem(obj) -> tuple[str, str | None] | None:
    """(message, field) of the most relevant way `obj` breaks the scenario schema, or None.
    The message is the failing keyword's `x-errors` text in the schema, else built from it."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(obj))
    if error is None:
        return None
    where = list(error.absolute_path)
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        return "missing required field", _field([*where, missing[0]])
    said = error.schema.get("x-errors", {}).get(error.validator)
    if said is None and error.validator == "type":
        want = error.validator_value
        want = [want] if isinstance(want, str) else want
        said = f"must be {' or '.join(_TYPES[t] for t in want)}"
    got = json.dumps(error.instance, ensure_ascii=False)
    got = got if len(got) <= 40 else got[:37] + "..."
    return f"{said or error.message}; got {got}", _field(where)


def _block_dict(b: Block) -> dict:
    out = {"id": b.id, "text": b.text, "kind": b.kind}
    if b.declared_cost is not None:
        out["cost"] = b.declared_cost
    return out


def _validate(s: Scenario) -> None:
    """What the schema cannot say: ids unique, edges and chain naming blocks, no self-loop, the
    chain a non-empty set, one confidence per edge (also for scenarios built in Python)."""
    ids = UniqueIds("block", ScenarioError)
    for i, b in enumerate(s.blocks):
        ids.add(b.id, field=f"blocks[{i}].id")
    seen = ids.seen
    conf = s.metadata.get(CONFIDENCE)
    if conf is not None and len(conf) != len(s.edges):
        raise ScenarioError(
            f"must be a list of {len(s.edges)} numbers, one per edge", field=CONFIDENCE
        )
    for i, (d, p) in enumerate(s.edges):
        for which, x in (("dependent", d), ("prerequisite", p)):
            if x not in seen:
                raise ScenarioError(f"{which} {x!r} is not a block id", field=f"edges[{i}]")
        if d == p:
            raise ScenarioError(f"self-loop on {d!r}", field=f"edges[{i}]")
    if not s.chain:
        raise ScenarioError("chain is empty", field="chain")
    if len(set(s.chain)) != len(s.chain):
        dup = sorted({c for c in s.chain if s.chain.count(c) > 1})
        raise ScenarioError(f"chain is not a set: repeats {dup}", field="chain")
    for c in s.chain:
        if c not in seen:
            raise ScenarioError(f"chain names unknown block {c!r}", field="chain")


# --- JSONL I/O -------------------------------------------------------------------------------


def iter_scenarios(path: str | os.PathLike, data: bytes | None = None) -> Iterator[Scenario]:
    """Yield scenarios from a JSONL file, raising ScenarioError with file and line on bad input
    (`data`: the file's bytes, already in memory, named by `path`)."""
    path = str(path)
    ids = UniqueIds("scenario", ScenarioError, path)
    for lineno, obj in read_jsonl(path, ScenarioError, data=data):
        sc = Scenario.from_dict(obj, path=path, line=lineno)
        ids.add(sc.id, lineno)
        yield sc


def load_scenarios(path: str | os.PathLike, data: bytes | None = None) -> list[Scenario]:
    """Read every scenario of a JSONL file (`data`: its bytes, already in memory)."""
    return list(iter_scenarios(path, data))


def dumps(s: Scenario) -> str:
    """One scenario as one JSON line (stable key order, no trailing spaces)."""
    return json.dumps(s.to_dict(), ensure_ascii=False, separators=(", ", ": "), allow_nan=False)


def save_scenarios(scenarios: Iterable[Scenario], path: str | os.PathLike) -> None:
    """Write scenarios as JSONL, atomically."""
    atomic_write_text(path, "".join(dumps(s) + "\n" for s in scenarios))

"""Referential closure for tool-call logs: spans, handles, span edges, the closure check.

Relevance is a scalar over content; tool-call validity is a graph over references (seed 002).
This module reads span logs, finds which handles a window defines and references, turns a log
into (dependent, prerequisite) edges that DSGC can use, and checks closure; the window managers
that evict over a growing log live in `workbench.closure.managers`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from workbench.encoders import token_cost
from workbench.handles import DEFAULT_PATTERNS, Patterns
from workbench.io import InputError, UniqueIds, atomic_write_text, read_jsonl
from workbench.policies import eviction_margin

ROLES = ("user", "reasoning", "call", "result", "retrieval", "tombstone")
ANSWERS = ("result", "retrieval")  # roles that answer a call


class SpanError(InputError):
    """A trace (or trace file) is malformed; the message names file, line and field."""


class ContextClosureError(RuntimeError):
    """An eviction cycle would leave a retained span referencing an evicted binding."""


@dataclass(frozen=True)
class Span:
    """One span of an agent trace: a user turn, reasoning, a tool call, its result, a document."""

    id: str
    turn: int
    role: str
    text: str
    depends_on: tuple[str, ...] = ()

    @property
    def cost(self) -> int:
        return token_cost(self.text)

    def to_dict(self) -> dict:
        out = {"id": self.id, "turn": self.turn, "role": self.role, "text": self.text}
        if self.depends_on:
            out["depends_on"] = list(self.depends_on)
        return out

    def __repr__(self) -> str:
        short = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return f"Span({self.id!r}, t={self.turn}, {self.role}, {short!r})"


def tombstone_span(span_id: str, turn: int, handle: str) -> Span:
    """The typed tombstone an externalized component leaves behind."""
    return Span(
        span_id, turn, "tombstone", json.dumps({"evicted_ref": handle, "recoverable": True})
    )


# --- trace files (JSONL, one span a line) -------------------------------------------------------


def span_from_dict(obj, *, path: str | None = None, line: int | None = None) -> Span:
    """Validate one decoded JSON line as a span."""

    def err(msg, fld=None):
        return SpanError(msg, path=path, line=line, field=fld)

    if not isinstance(obj, dict):
        raise err(f"expected a JSON object, got {type(obj).__name__}")
    for key in ("id", "turn", "role", "text"):
        if key not in obj:
            raise err("missing required field", key)
    if not isinstance(obj["id"], str) or not obj["id"]:
        raise err("must be a non-empty string", "id")
    if not isinstance(obj["turn"], int) or isinstance(obj["turn"], bool) or obj["turn"] < 0:
        raise err("must be a non-negative integer", "turn")
    if obj["role"] not in ROLES:
        raise err(f"must be one of {', '.join(ROLES)}; got {obj['role']!r}", "role")
    if not isinstance(obj["text"], str) or not obj["text"].strip():
        raise err("must be a non-empty string", "text")
    deps = obj.get("depends_on", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) and d for d in deps):
        raise err("must be a list of span ids", "depends_on")
    if obj["id"] in deps:
        raise err(f"span {obj['id']!r} depends on itself", "depends_on")
    return Span(obj["id"], obj["turn"], obj["role"], obj["text"], tuple(deps))


def load_spans(path: str | os.PathLike) -> list[Span]:
    """Read a JSONL span log; a bad line raises SpanError naming file, line and field."""
    path = str(path)
    spans, ids = [], UniqueIds("span", SpanError, path)
    for lineno, obj in read_jsonl(path, SpanError):
        span = span_from_dict(obj, path=path, line=lineno)
        ids.add(span.id, lineno)
        if spans and span.turn < spans[-1].turn:
            raise SpanError(
                f"turn {span.turn} goes back in time (previous {spans[-1].turn})",
                path=path,
                line=lineno,
                field="turn",
            )
        spans.append(span)
    return spans


def save_spans(spans, path: str | os.PathLike) -> None:
    """Write spans as JSONL, atomically."""
    atomic_write_text(
        path, "".join(json.dumps(s.to_dict(), ensure_ascii=False) + "\n" for s in spans)
    )


@dataclass(frozen=True, repr=False)
class WindowReport:
    """Closure of a retained set: handles defined and referenced, orphans, asymmetric pairs, margin."""

    defined: tuple[str, ...]
    referenced: tuple[str, ...]
    tombstoned: tuple[str, ...]
    orphans: dict = field(default_factory=dict)  # handle -> ids of retained spans naming it
    missing_deps: dict = field(default_factory=dict)  # absent depends-on id -> ids needing it
    asymmetric: tuple = ()  # (call id, answer id or None): call retained, its binding answer not
    margin: float | None = None  # lowest retained score minus highest evicted score

    @property
    def closed(self) -> bool:
        return not self.orphans and not self.missing_deps

    def lines(self) -> list[str]:
        """The report as printable lines (stable order)."""
        out = [
            f"closure: {'OK' if self.closed else 'FAILED'}  defined={len(self.defined)} "
            f"referenced={len(self.referenced)} tombstoned={len(self.tombstoned)}"
        ]
        for h, ids in self.orphans.items():
            out.append(f"orphaned reference {h}: named by {', '.join(ids)}")
        for d, ids in self.missing_deps.items():
            out.append(f"missing dependency {d}: needed by {', '.join(ids)}")
        for call, ans in self.asymmetric:
            out.append(
                f"asymmetric pair: call {call} retained, "
                + (f"its result {ans} evicted" if ans else "no result retained")
            )
        if self.margin is not None:
            out.append(f"eviction margin: {self.margin:.4f}")
        return out

    def __repr__(self) -> str:
        m = "n/a" if self.margin is None else f"{self.margin:.3f}"
        return (
            f"WindowReport({'closed' if self.closed else 'OPEN'}, orphans={list(self.orphans)}, "
            f"asymmetric={len(self.asymmetric)}, margin={m})"
        )


class SpanIndex:
    """Incremental index of a growing trace: handles per span, (dependent, prerequisite) edges,
    (call, answer) pairs. Spans are only appended; positions never change."""

    def __init__(self, patterns: Patterns = DEFAULT_PATTERNS):
        self.patterns = patterns
        self.spans: list[Span] = []
        self.pos: dict[str, int] = {}
        self.refs: list[frozenset] = []
        self.defs: list[frozenset] = []
        self.tombs: list[frozenset] = []
        self.unresolved: list[tuple[str, ...]] = []  # depends-on ids not seen before the span
        self.definer: dict[str, int] = {}  # handle -> first span defining it
        self._edges: list[tuple[int, int]] = []
        self._pairs: list[tuple[int, int]] = []
        self._open_calls: list[int] = []  # calls without an answer yet, oldest first
        self._arrays = None

    def add(self, span: Span) -> int:
        """Append a span; returns its position."""
        if span.id in self.pos:
            raise SpanError(f"duplicate span id {span.id!r}", field="id")
        i = len(self.spans)
        refs, defs, tombs = self.patterns.scan(span.text)
        self.spans.append(span)
        self.pos[span.id] = i
        self.refs.append(refs)
        self.defs.append(defs)
        self.tombs.append(tombs)
        deps = [self.pos[d] for d in span.depends_on if d in self.pos]
        self.unresolved.append(tuple(d for d in span.depends_on if d not in self.pos))
        edges = {(i, p) for p in deps}
        # a span referencing a handle depends on the span that first defined it
        edges |= {(i, self.definer[h]) for h in refs if h in self.definer and self.definer[h] != i}
        for h in sorted(defs):
            self.definer.setdefault(h, i)
        if span.role in ANSWERS:
            calls = [p for p in deps if self.spans[p].role == "call"]
            if not calls and span.role == "result" and self._open_calls:
                calls = [self._open_calls[-1]]  # no explicit link: the most recent open call
            for c in calls[:1]:
                edges.add((i, c))  # a result depends on its call
                self._pairs.append((c, i))
                if c in self._open_calls:
                    self._open_calls.remove(c)
        elif span.role == "call":
            self._open_calls.append(i)
        self._edges.extend(sorted(edges))
        self._arrays = None
        return i

    def extend(self, spans) -> SpanIndex:
        for s in spans:
            self.add(s)
        return self

    def _build(self):
        if self._arrays is None:
            e = np.array(self._edges, dtype=np.int64).reshape(-1, 2)
            p = np.array(self._pairs, dtype=np.int64).reshape(-1, 2)
            self._arrays = (e, p)
        return self._arrays

    @property
    def edges(self) -> np.ndarray:
        """(|E|, 2) int array of (dependent, prerequisite) positions."""
        return self._build()[0]

    @property
    def pairs(self) -> np.ndarray:
        """(|P|, 2) int array of (call, answer) positions."""
        return self._build()[1]

    @property
    def bindings(self) -> np.ndarray:
        """The (call, answer) pairs whose answer defines a handle: the call's binding."""
        p = self.pairs
        return p[np.array([bool(self.defs[a]) for a in p[:, 1]], dtype=bool).reshape(-1)]

    def edge_ids(self) -> list[tuple[str, str]]:
        return [(self.spans[d].id, self.spans[p].id) for d, p in self._edges]

    def report(
        self,
        kept: np.ndarray | None = None,
        scores: np.ndarray | None = None,
        scored: np.ndarray | None = None,
    ) -> WindowReport:
        """Closure of the retained set `kept` (default: every span, i.e. a window as given)."""
        n = len(self.spans)
        kept = np.ones(n, dtype=bool) if kept is None else np.asarray(kept, dtype=bool)
        idx = np.flatnonzero(kept)
        defined = set().union(*(self.defs[i] for i in idx))
        referenced = set().union(*(self.refs[i] for i in idx))
        tombstoned = set().union(*(self.tombs[i] for i in idx))
        orphans = {
            h: tuple(self.spans[i].id for i in idx if h in self.refs[i])
            for h in sorted(referenced - defined - tombstoned)
        }
        missing: dict[str, list[str]] = {}
        for i in idx:
            need = list(self.unresolved[i]) + [
                self.spans[p].id for p in self._explicit(i) if not kept[p]
            ]
            for d in need:
                missing.setdefault(d, []).append(self.spans[i].id)
        asym = [
            (self.spans[c].id, self.spans[a].id)
            for c, a in self.bindings
            if kept[c] and not kept[a]
        ]
        answered = set(self.pairs[:, 0].tolist())
        last_turn = self.spans[idx[-1]].turn if len(idx) else 0
        asym += [
            (self.spans[i].id, None)
            for i in idx  # a creating call (it names no handle)
            if self.spans[i].role == "call"
            and i not in answered  # the agent moved on from
            and not self.refs[i]
            and self.spans[i].turn < last_turn
        ]  # with no answer kept
        margin = None if scores is None else eviction_margin(scores, kept, scored)
        return WindowReport(
            tuple(sorted(defined)),
            tuple(sorted(referenced)),
            tuple(sorted(tombstoned)),
            orphans,
            {d: tuple(v) for d, v in sorted(missing.items())},
            tuple(asym),
            margin,
        )

    def _explicit(self, i: int) -> list[int]:
        """Explicit prerequisites that closure requires (an answer's link to its call is a pairing)."""
        deps = [self.pos[d] for d in self.spans[i].depends_on if d in self.pos]
        if self.spans[i].role in ANSWERS:
            deps = [p for p in deps if self.spans[p].role != "call"]
        return deps


def analyze(spans, kept=None, scores=None, patterns: Patterns = DEFAULT_PATTERNS) -> WindowReport:
    """Handle analysis of a window: `spans` with an optional kept mask and relevance scores."""
    return SpanIndex(patterns).extend(spans).report(kept, scores)


def span_edges(spans, patterns: Patterns = DEFAULT_PATTERNS) -> list[tuple[str, str]]:
    """(dependent, prerequisite) span-id edges: explicit depends-on, result -> call, reference ->
    definition. The same shape as a scenario's `edges`, so DSGC can propagate over them."""
    return SpanIndex(patterns).extend(spans).edge_ids()


def closure_requirements(kept: np.ndarray, edges: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Spans that must join `kept` for it to be closed: every prerequisite of a retained span and
    the binding answer of every retained call (`pairs`), to a fixpoint (a vectorized pass a layer)."""
    need = np.array(kept, dtype=bool)
    dep = np.concatenate([edges[:, 0], pairs[:, 0]])
    pre = np.concatenate([edges[:, 1], pairs[:, 1]])
    while True:
        add = pre[need[dep] & ~need[pre]]
        if not len(add):
            return need & ~np.asarray(kept, dtype=bool)
        need[add] = True


def components(n: int, edges: np.ndarray, pairs: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Connected-component label (smallest member position) of each span in `among`; -1 outside."""
    lab = np.where(among, np.arange(n), -1)
    links = np.concatenate([edges, pairs])
    links = links[among[links[:, 0]] & among[links[:, 1]]] if len(links) else links
    while len(links):
        lo = np.minimum(lab[links[:, 0]], lab[links[:, 1]])
        new = lab.copy()
        np.minimum.at(new, links[:, 0], lo)
        np.minimum.at(new, links[:, 1], lo)
        new[among] = new[new[among]]  # pointer jumping speeds up long chains
        if np.array_equal(new, lab):
            break
        lab = new
    return lab

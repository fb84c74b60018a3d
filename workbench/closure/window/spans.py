"""Referential closure for tool-call logs: spans, handles, span edges, the closure check.

Relevance is a scalar over content; tool-call validity is a graph over references (seed 002).
This module reads span logs, finds which handles a window defines and references, turns a log
into (dependent, prerequisite) edges that DSGC can use, and checks closure; the window managers
that evict over a growing log live in `workbench.closure.window.managers`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

import numpy as np

from workbench.common.encoders import token_cost
from workbench.common.handles import HANDLE_RE, Patterns
from workbench.common.io import InputError, UniqueIds, atomic_write_text, read_jsonl
from workbench.dsgc.policies import eviction_margin

ROLES = ("system", "user", "reasoning", "call", "result", "retrieval", "tombstone")
ANSWERS = ("result", "retrieval")  # roles that answer a call
GIVERS = ("system", "user")  # roles whose named handles are given to the agent, i.e. defined

# The closure study's default handle rules. References: the note's handle pattern. Definitions:
# a JSON key `id` or `<something>_id` whose value is a handle ("id": "run_8841", "job_id":
# "job_7f3a2c"), as real tool results write them (the note's rule knows only "id"). Tombstones:
# the note's typed tombstone, for any handle.
ID_KEY_DEFINITION = r'"(?:[A-Za-z][A-Za-z0-9]*_)?id"\s*:\s*"({handle})"'
ANY_TOMBSTONE_RE = r'"evicted_ref"\s*:\s*"([^"]+)"'


def closure_patterns(
    handle: str = HANDLE_RE, definition: str | None = None, tombstone: str | None = None
) -> Patterns:
    """Handle rules for the closure study: `definition` defaults to the id-key rule around
    `handle` (group 1 is the handle), `tombstone` to the note's typed tombstone for any handle."""
    return Patterns(
        handle,
        definition if definition is not None else ID_KEY_DEFINITION.format(handle=handle),
        tombstone if tombstone is not None else ANY_TOMBSTONE_RE,
    )


CLOSURE_PATTERNS = closure_patterns()


def scan(
    patterns: Patterns, role: str, text: str, found=None
) -> tuple[frozenset, frozenset, frozenset]:
    """(referenced, defined, tombstoned) handles of one span, with the role rules: a call names
    handles but never binds one; a handle the user (or system) writes is given, so it is defined
    there; any other span defines what the definition rule matches. `found`: the patterns' scan
    of the text, if already made."""
    refs, defs, tombs = patterns.scan(text) if found is None else found
    if role == "call":
        defs = frozenset()
    elif role in GIVERS:
        defs = defs | refs
    return refs, defs, tombs


class SpanError(InputError):
    """A trace (or trace file) is malformed; the message names file, line and field."""


class ContextClosureError(RuntimeError):
    """An eviction cycle would leave a retained span referencing an evicted binding, or its
    margin is below the floor (raise mode)."""


@dataclass(frozen=True, slots=True)
class Span:
    """One span of an agent trace: a user turn, reasoning, a tool call, its result, a document.

    `score` is an externally supplied relevance (an LLM judge's, say) that a manager uses instead
    of the encoder's cosine; `pinned` spans are never evicted and take no part in the margin.
    """

    id: str
    turn: int
    role: str
    text: str
    depends_on: tuple[str, ...] = ()
    score: float | None = None
    pinned: bool = False

    @property
    def cost(self) -> int:
        return token_cost(self.text)

    def to_dict(self) -> dict:
        out = {"id": self.id, "turn": self.turn, "role": self.role, "text": self.text}
        if self.depends_on:
            out["depends_on"] = list(self.depends_on)
        if self.score is not None:
            out["score"] = self.score
        if self.pinned:
            out["pinned"] = True
        return out

    def __repr__(self) -> str:
        short = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        extra = ("" if self.score is None else f", score={self.score:g}") + (
            ", pinned" if self.pinned else ""
        )
        return f"Span({self.id!r}, t={self.turn}, {self.role}, {short!r}{extra})"


TOMBSTONE_COST = 4  # words in the note's typed tombstone


def tombstone_span(span_id: str, turn: int, handle: str) -> Span:
    """The typed tombstone an externalized component leaves behind (small, and pinned)."""
    return Span(
        span_id,
        turn,
        "tombstone",
        json.dumps({"evicted_ref": handle, "recoverable": True}),
        pinned=True,
    )


# --- trace files (JSONL, one span a line) -------------------------------------------------------


def _ids(deps: list) -> bool:
    return all(type(d) is str and d for d in deps)


def span_from_dict(obj, *, path: str | None = None, line: int | None = None) -> Span:
    """Validate one decoded JSON line as a span."""
    if type(obj) is dict and "score" not in obj and "pinned" not in obj:  # the usual shape
        sid, turn, role, text = obj.get("id"), obj.get("turn"), obj.get("role"), obj.get("text")
        deps = obj.get("depends_on", ())
        if (
            type(sid) is str
            and sid
            and type(turn) is int
            and turn >= 0
            and role in ROLES
            and type(text) is str
            and text.strip()
            and (deps == () or (type(deps) is list and _ids(deps) and sid not in deps))
        ):
            return Span(sid, turn, role, text, tuple(deps))
    # any other shape: each rule in turn, naming the field that breaks it

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
    score = obj.get("score")
    if score is not None and (
        not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score)
    ):
        raise err("must be a finite number (the span's relevance) or absent", "score")
    pinned = obj.get("pinned", False)
    if not isinstance(pinned, bool):
        raise err("must be true or false", "pinned")
    return Span(
        obj["id"],
        obj["turn"],
        obj["role"],
        obj["text"],
        tuple(deps),
        None if score is None else float(score),
        pinned,
    )


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
    """Incremental index of a growing trace: handles per span, what closure requires of each span,
    (call, answer) pairs. Spans are only appended; positions never change; adding a span costs
    O(its text + its references), whatever the length of the trace."""

    def __init__(self, patterns: Patterns = CLOSURE_PATTERNS):
        self.patterns = patterns
        self.spans: list[Span] = []
        self.pos: dict[str, int] = {}
        self.cost: list[int] = []
        self.refs: list[frozenset] = []
        self.defs: list[frozenset] = []
        self.tombs: list[frozenset] = []
        self.unresolved: list[tuple[str, ...]] = []  # depends-on ids not seen before the span
        self.needs: list[list[int]] = []  # positions closure requires if this span is retained
        self.explicit: list[tuple[int, ...]] = []  # depends-on links other than answer -> call
        self.definer: dict[str, int] = {}  # handle -> first span defining it
        self.defined_by: dict[str, list[int]] = {}  # handle -> every span defining it
        self.named_by: dict[str, list[int]] = {}  # handle -> every span naming it
        self.call_of: dict[int, int] = {}  # answer -> its call
        self.unit: list[int] = []  # a binding answer shares its call's unit (each needs the other)
        self.answers: dict[int, list[int]] = {}  # call -> its answers
        self._pairs: list[tuple[int, int]] = []
        self._open_calls: dict[int, None] = {}  # calls without an answer yet, oldest first
        self._arrays = (0, None)
        self._found: dict[str, tuple] = {}  # text -> (its scan, its cost)

    def __len__(self) -> int:
        return len(self.spans)

    def add(self, span: Span) -> int:
        """Append a span; returns its position."""
        sid, text, role = span.id, span.text, span.role
        pos = self.pos
        if sid in pos:
            raise SpanError(f"duplicate span id {sid!r}", field="id")
        i = len(self.spans)
        found = self._found.get(text)  # a log repeats texts: each is searched (and costed) once
        if found is None:
            found = self._found[text] = (self.patterns.scan(text), token_cost(text))
        refs, defs, tombs = scan(self.patterns, role, text, found[0])
        self.spans.append(span)
        pos[sid] = i
        self.cost.append(found[1])
        self.refs.append(refs)
        self.defs.append(defs)
        self.tombs.append(tombs)
        deps = span.depends_on
        if deps:
            deps = [pos[d] for d in deps if d in pos]
            self.unresolved.append(tuple(d for d in span.depends_on if d not in pos))
            need = set(deps)
        else:
            self.unresolved.append(())
            need = set()
        if refs:  # a span naming a handle it does not itself define needs the span that first did
            definer = self.definer
            need.update(definer[h] for h in refs - defs if h in definer)
            for h in sorted(refs):
                self.named_by.setdefault(h, []).append(i)
        if defs:
            for h in sorted(defs):
                self.definer.setdefault(h, i)
                self.defined_by.setdefault(h, []).append(i)
        call = None
        if role in ANSWERS:
            calls = [p for p in deps if self.spans[p].role == "call"]
            if not calls and role == "result" and self._open_calls:
                calls = [next(reversed(self._open_calls))]  # no link: the most recent open call
            if calls:
                call = calls[0]
                need.add(call)  # a result depends on its call
                self.call_of[i] = call
                self.answers.setdefault(call, []).append(i)
                self._pairs.append((call, i))
                self._open_calls.pop(call, None)
                if defs:  # the call's binding: a retained call needs it
                    self.needs[call].append(i)
        self.unit.append(call if call is not None and defs else i)
        if role == "call":
            self._open_calls[i] = None
        need.discard(i)
        self.needs.append(sorted(need) if len(need) > 1 else list(need))
        self.explicit.append(tuple(p for p in deps if p != call) if deps else ())
        return i

    def extend(self, spans) -> SpanIndex:
        for s in spans:
            self.add(s)
        return self

    def _edge_list(self) -> list[tuple[int, int]]:
        """(dependent, prerequisite) pairs: what each span needs, except a call's need of its
        binding answer (that is a pairing, in `pairs`)."""
        return [
            (i, p)
            for i, need in enumerate(self.needs)
            for p in need
            if self.call_of.get(p) != i or self.spans[i].role != "call"
        ]

    def _build(self):
        n, arrays = self._arrays
        if arrays is None or n != len(self.spans):
            e = np.array(self._edge_list(), dtype=np.int64).reshape(-1, 2)
            p = np.array(self._pairs, dtype=np.int64).reshape(-1, 2)
            self._arrays = (len(self.spans), (e, p))
        return self._arrays[1]

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
        return [(self.spans[d].id, self.spans[p].id) for d, p in self._edge_list()]

    def positions(self, kept=None) -> list[int]:
        """Positions of a retained set given as None (every span), a bool mask or positions."""
        if kept is None:
            return list(range(len(self.spans)))
        if (
            isinstance(kept, np.ndarray)
            and kept.dtype == bool
            or (isinstance(kept, list | tuple) and kept and isinstance(kept[0], bool | np.bool_))
        ):
            return np.flatnonzero(np.asarray(kept, dtype=bool)).tolist()
        return sorted(int(i) for i in kept)

    def report(
        self,
        kept=None,
        scores: np.ndarray | None = None,
        scored: np.ndarray | None = None,
    ) -> WindowReport:
        """Closure of the retained set `kept` (default: every span, i.e. a window as given), in
        O(retained spans and their references)."""
        idx = self.positions(kept)
        keep = set(idx)
        defined, referenced, tombstoned = set(), set(), set()
        for i in idx:
            defined |= self.defs[i]
            referenced |= self.refs[i]
            tombstoned |= self.tombs[i]
        named: dict[str, list[str]] = {}
        missing: dict[str, list[str]] = {}
        asym = []
        last_turn = self.spans[idx[-1]].turn if idx else 0
        for i in idx:
            sid = self.spans[i].id
            for h in self.refs[i]:
                if h not in defined and h not in tombstoned:
                    named.setdefault(h, []).append(sid)
            for d in self.unresolved[i]:
                missing.setdefault(d, []).append(sid)
            for p in self.explicit[i]:
                if p not in keep:
                    missing.setdefault(self.spans[p].id, []).append(sid)
            if self.spans[i].role == "call":
                answers = self.answers.get(i, ())
                asym += [(sid, self.spans[a].id) for a in answers if self.defs[a] and a not in keep]
                if not answers and not self.refs[i] and self.spans[i].turn < last_turn:
                    asym.append((sid, None))  # a creating call the agent moved on from, unanswered
        margin = None
        if scores is not None:
            mask = np.zeros(len(self.spans), dtype=bool)
            mask[idx] = True
            margin = eviction_margin(scores, mask, scored)
        return WindowReport(
            tuple(sorted(defined)),
            tuple(sorted(referenced)),
            tuple(sorted(tombstoned)),
            {h: tuple(named[h]) for h in sorted(named)},
            {d: tuple(missing[d]) for d in sorted(missing)},
            tuple(asym),
            margin,
        )


def analyze(spans, kept=None, scores=None, patterns: Patterns = CLOSURE_PATTERNS) -> WindowReport:
    """Handle analysis of a window: `spans` with an optional kept mask and relevance scores."""
    return SpanIndex(patterns).extend(spans).report(kept, scores)


def span_edges(spans, patterns: Patterns = CLOSURE_PATTERNS) -> list[tuple[str, str]]:
    """(dependent, prerequisite) span-id edges: explicit depends-on, result -> call, reference ->
    definition. The same shape as a scenario's `edges`, so DSGC can propagate over them."""
    return SpanIndex(patterns).extend(spans).edge_ids()


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

"""A seeded long-horizon agent that submits jobs, polls them, queries sessions, reads documents,
reasons and chats, with its context window owned by a closure manager; plus the reports.

The agent acts only on what its window shows: it polls a job, queries a session or reads a
document when a retained span mentions that object. To use the object it needs the binding (a
retained span that defines the handle, or a tombstone it can restore). Without one it re-issues
a plausible mutated handle (hex suffix +-1 or 2): if the sparse namespace holds that handle the
tool accepts it (silent corruption), otherwise the call errors (invalid call), as in seed 002.
Each turn draws from its own generator `default_rng([seed, turn])`, so runs under different
managers make the same choices until their windows differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from workbench.closure.managers import MANAGERS, make_manager
from workbench.closure.spans import Span

TOPICS = (
    "train the churn model on the customer sales table",
    "reconcile vendor invoices against the general ledger",
    "find the latency regression in the checkout service",
    "audit the payment gateway access logs for anomalies",
)
CHATTER = (
    "by the way the coffee machine on floor three is broken again",
    "thanks, that is helpful, carry on",
    "sorry for the delay, I was in a meeting",
    "can you keep answers short today please",
    "lunch is at noon if you want to join",
    "remind me later about the offsite agenda",
)
THOUGHTS = (
    "the next step is to compare against last week",
    "I should check the assumptions before reporting",
    "the numbers so far look consistent",
    "a quick summary will help the user decide",
)
# action: weight (drawn from fixed weights every turn, so choices align across managers)
ACTIONS = {
    "switch": 0.07,
    "submit": 0.14,
    "poll": 0.22,
    "session": 0.05,
    "query": 0.10,
    "search": 0.07,
    "read": 0.07,
    "reason": 0.10,
    "chat": 0.18,
}
PREFIX = {"job": ("run", "job"), "session": ("sess",), "doc": ("doc",)}


@dataclass
class _Obj:
    """A job, session or document the agent created (simulator ground truth, mutable)."""

    kind: str
    handle: str
    project: int
    ready: int  # turn a job finishes / a session expires
    span_ids: list = field(default_factory=list)
    status: str = "open"  # open, done, lost
    uses: int = 0


@dataclass(frozen=True, repr=False)
class Run:
    """One simulated run under one manager: the per-turn timeline and the eviction cycles."""

    manager: str
    seed: int
    timeline: pd.DataFrame
    cycles: tuple
    jobs_submitted: int
    jobs_done: int
    restores: int

    def __repr__(self) -> str:
        t = self.timeline
        return (
            f"Run({self.manager}, seed={self.seed}, {len(t)} turns, "
            f"invalid={int(t.invalid.sum())}, corrupt={int(t.corrupt.sum())})"
        )


class _Agent:
    """The simulated agent bound to one manager (the world and its namespace live here too)."""

    def __init__(self, manager, seed: int):
        self.m, self.seed = manager, seed
        base = np.random.default_rng([seed, 10**6])
        self.next_hex = {
            p: int(base.integers(0x1000, 0xE000)) for p in ("run", "job", "sess", "doc")
        }
        self.namespace: set[str] = set()  # every handle the tool layer has issued (sparse)
        self.objs: list[_Obj] = []
        self.project = 0
        self.serial = 0
        self.restores = 0

    # --- helpers ---
    def _span(self, turn, role, text, obj=None, deps=()) -> Span:
        self.serial += 1
        s = Span(f"s{self.serial}", turn, role, text, tuple(deps))
        if obj is not None:
            obj.span_ids.append(s.id)
        return s

    def _obj(self, kind, handle, ready) -> _Obj:
        o = _Obj(kind, handle, self.project, ready)
        self.objs.append(o)
        return o

    def _new_handle(self, prefix, rng) -> str:
        self.next_hex[prefix] += int(rng.integers(1, 3))  # gaps of 1-2: a dense, guessable space
        h = f"{prefix}_{self.next_hex[prefix]:04x}"
        self.namespace.add(h)
        return h

    def _known(self, kind) -> list[_Obj]:
        """Open objects of the current project that the window still shows (or tombstones)."""
        kept, pos = self.m.kept, self.m.index.pos
        out = []
        for o in self.objs:
            if o.kind != kind or o.project != self.project or o.status != "open":
                continue
            if (
                any(i in pos and kept[pos[i]] for i in o.span_ids)
                or self.m.resolve(o.handle) == "recoverable"
            ):
                out.append(o)
        return out

    def _bind(self, obj: _Obj, rng) -> tuple[str, str]:
        """(handle the agent will use, outcome: ok | corrupt | invalid)."""
        state = self.m.resolve(obj.handle)
        if state == "recoverable":
            self.m.restore(obj.handle)
            self.restores += 1
            state = "bound"
        if state == "bound":
            return obj.handle, "ok"
        prefix, hexpart = obj.handle.split("_")
        guess = f"{prefix}_{int(hexpart, 16) + int(rng.choice([-2, -1, 1, 2])):04x}"
        return guess, ("corrupt" if guess in self.namespace else "invalid")

    # --- one turn ---
    def turn(self, t: int) -> dict:
        rng = np.random.default_rng([self.seed, t])
        action = rng.choice(
            list(ACTIONS), p=np.array(list(ACTIONS.values())) / sum(ACTIONS.values())
        )
        topic = TOPICS[self.project]
        spans, outcome, failing = [], "ok", ""
        if t == 0 or action == "switch":
            self.project = int(rng.integers(len(TOPICS))) if t else 0
            topic = TOPICS[self.project]
            spans.append(self._span(t, "user", f"Let us get back to the task: {topic}."))
        elif action == "submit" and len(self._known("job")) < 2:
            h = self._new_handle(str(rng.choice(PREFIX["job"])), rng)
            o = self._obj("job", h, t + int(rng.integers(8, 40)))
            call = self._span(
                t, "call", f'submit_job(task="{topic}", variant={int(rng.integers(1, 9))})', o
            )
            res = self._span(t, "result", json.dumps({"id": h, "status": "queued"}), o, [call.id])
            spans += [call, res]
        elif action in ("poll", "query", "read") and self._known(
            {"poll": "job", "query": "session", "read": "doc"}[action]
        ):
            kind = {"poll": "job", "query": "session", "read": "doc"}[action]
            cands = self._known(kind)
            o = cands[int(rng.integers(len(cands)))]
            h, outcome = self._bind(o, rng)
            text = {
                "job": f'poll(job="{h}")  # check on: {topic}',
                "session": f'query(session="{h}", sql="select rows to {topic}")',
                "doc": f'read_doc(doc="{h}")  # background to {topic}',
            }[kind]
            call = self._span(t, "call", text, o)
            if outcome == "invalid":
                failing = text
                res = self._span(
                    t, "result", json.dumps({"error": f"unknown handle {h}"}), o, [call.id]
                )
                o.status = "lost"
            elif outcome == "corrupt":
                failing = text
                res = self._span(
                    t, "result", json.dumps({"job": h, "status": "done"}), o, [call.id]
                )
                o.status = "lost"  # the agent believes the wrong object answered
            else:
                o.uses += 1
                body = {
                    "job": {"job": h, "status": "done" if t >= o.ready else "running"},
                    "session": {"session": h, "rows": int(rng.integers(10, 5000))},
                    "doc": {"doc": h, "section": o.uses},
                }[kind]
                res = self._span(t, "result", json.dumps(body), o, [call.id])
                if (kind == "job" and t >= o.ready) or (
                    kind != "job" and (t >= o.ready or o.uses >= 3)
                ):
                    o.status = "done"
            spans += [call, res]
            if o.status == "done" and kind == "job":
                spans.append(
                    self._span(t, "reasoning", f"{h} finished, so I can report on: {topic}", o)
                )
        elif action == "session" and not self._known("session"):
            h = self._new_handle("sess", rng)
            o = self._obj("session", h, t + 30)
            call = self._span(t, "call", f'open_session(db="warehouse", purpose="{topic}")', o)
            spans += [call, self._span(t, "result", json.dumps({"id": h, "ttl": 30}), o, [call.id])]
        elif action == "search":
            h = self._new_handle("doc", rng)
            o = self._obj("doc", h, t + 60)
            call = self._span(t, "call", f'search_docs(query="{topic}")', o)
            doc = {"id": h, "title": f"notes: {topic}", "text": f"how we {topic} in practice"}
            spans += [call, self._span(t, "retrieval", json.dumps(doc), o, [call.id])]
        elif action == "chat":
            spans.append(self._span(t, "user", str(rng.choice(CHATTER))))
        else:
            thought = f"Thinking about how to {topic}: {rng.choice(THOUGHTS)}."
            jobs = [o for o in self._known("job") if self.m.resolve(o.handle) == "bound"]
            o = jobs[int(rng.integers(len(jobs)))] if jobs and rng.random() < 0.5 else None
            if o is not None:
                thought += f" Still waiting on {o.handle}."
            spans.append(self._span(t, "reasoning", thought, o))
        for o in self.objs:
            if o.status == "open" and o.kind != "job" and t >= o.ready:
                o.status = "done"  # sessions expire, documents go stale
        self.m.add(*spans)
        cyc = self.m.step(TOPICS[self.project], t)
        rep = self.m.report()
        return {
            "turn": t,
            "used": self.m.used,
            "occupancy": self.m.occupancy,
            "margin": np.nan if cyc is None or cyc.margin is None else cyc.margin,
            "cycle": cyc is not None,
            "orphans": len(rep.orphans),
            "asymmetric": len(rep.asymmetric),
            "invalid": int(outcome == "invalid"),
            "corrupt": int(outcome == "corrupt"),
            "closure_tokens": self.m.closure_tokens,
            "failing_call": failing,
        }


def simulate_run(
    manager: str, seed: int, turns: int = 300, capacity: int = 400, encoder: str = "lexical", **kw
) -> Run:
    """One seeded run of the agent under one manager."""
    m = make_manager(manager, capacity, encoder=encoder, **kw)
    agent = _Agent(m, seed)
    rows = [agent.turn(t) for t in range(turns)]
    tl = pd.DataFrame(rows)
    tl.insert(0, "seed", seed)
    tl.insert(0, "manager", manager)
    jobs = [o for o in agent.objs if o.kind == "job"]
    return Run(
        manager,
        seed,
        tl,
        tuple(m.cycles),
        len(jobs),
        sum(o.status == "done" for o in jobs),
        agent.restores,
    )


def simulate(
    managers=tuple(MANAGERS),
    seeds=range(5),
    turns: int = 300,
    capacity: int = 400,
    encoder: str = "lexical",
) -> list[Run]:
    """The same seeded runs under every manager."""
    return [simulate_run(m, s, turns, capacity, encoder) for m in managers for s in seeds]

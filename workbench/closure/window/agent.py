"""A seeded long-horizon agent that acts from its own task plan, with its context window owned by
a window manager: it submits jobs, opens sessions, finds documents, and later continues them.

Like an LLM agent, it remembers *what* it is doing (continue the churn-model job), not the
handle: the plan holds no identifiers. To continue a task it reconstructs the handle from what
the window holds:

- a retained span defines the handle (the submit result, say): the right handle (`ok`);
- `lenient` (the default): a retained span names it (an earlier poll): copied (`copied`);
- only a tombstone stands for it: the component is restored first, a loud, recoverable miss
  (`restored`); a store that misses the restore (`TombstoneManager(miss=p)`) leaves it nothing
  (`restore_missed` is counted, and it guesses as below);
- nothing: it re-issues a plausible mutated handle (hex suffix +-1 or 2). If the dense namespace
  holds that handle the tool accepts it (`corrupt`: silent corruption); otherwise the tool errors
  (`tool_error`: loud).

A gate in raise mode raises `ContextClosureError` at eviction time (loud); the harness then
repairs, re-running the cycle in throttle mode, as a caller catching the error would. Every turn
draws from its own generator `seeds.rng(seed, turn)`, so runs under different managers make
the same choices until their windows differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from workbench.closure.window.managers import MANAGERS, RestoreMissed, make_manager
from workbench.closure.window.spans import CLOSURE_PATTERNS, ContextClosureError, Span
from workbench.common.handles import Patterns
from workbench.common.seeds import rng as seeded

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
    "switch": 0.06,
    "submit": 0.10,
    "session": 0.04,
    "search": 0.06,
    "continue": 0.36,
    "reason": 0.14,
    "chat": 0.24,
}
# the streams past the per-turn ones (seeds.rng(seed, turn)): keys no turn number reaches
START_STREAM = 10**6  # the world's first handles
LONG_LOG_STREAM = 7  # long_log's one stream (it has no turns of its own to key by)
USES = {"session": 3, "doc": 2}  # uses to finish (a job finishes when polled once it is ready)
OUTCOMES = ("ok", "copied", "restored", "corrupt", "tool_error")
# what is counted besides a call's outcome: gate raises, restores the store missed, calls a
# pre-dispatch check would refuse
EVENTS = ("raise_dangling", "raise_margin", "restore_missed", "precheck_would_refuse")


@dataclass
class Task:
    """A job, session or document in the agent's plan (simulator ground truth, mutable)."""

    kind: str
    handle: str  # ground truth: the agent never reads it, it rebuilds it from the window
    project: int
    ready: int  # turn a job finishes / a session expires
    uses: int = 0
    status: str = "open"  # open, done, corrupt, lost, expired
    span_ids: list = field(default_factory=list)


@dataclass(frozen=True, repr=False)
class Run:
    """One simulated run under one manager: the per-turn timeline, the cycles and the counts."""

    manager: str  # the label: the manager's name, "-raise" / "-off" when so run
    seed: int
    timeline: pd.DataFrame
    cycles: tuple
    counts: dict  # outcomes, gate raises, pre-dispatch-catchable failures
    jobs_submitted: int
    jobs_done: int
    over_budget: tuple  # (turn, tokens over capacity) after each step that ended over

    @property
    def silent(self) -> int:
        return self.counts["corrupt"]

    def __repr__(self) -> str:
        c = self.counts
        return (
            f"Run({self.manager}, seed={self.seed}, {len(self.timeline)} turns, "
            f"silent={c['corrupt']}, tool errors={c['tool_error']}, restores={c['restored']}, "
            f"jobs {self.jobs_done}/{self.jobs_submitted})"
        )


class PlanAgent:
    """The simulated agent bound to one manager (the world and its namespace live here too)."""

    def __init__(self, manager, seed: int, *, lenient: bool = True, max_open: int = 3):
        self.m, self.seed, self.lenient, self.max_open = manager, seed, lenient, max_open
        base = seeded(seed, START_STREAM)
        self.next_hex = {
            p: int(base.integers(0x1000, 0xE000)) for p in ("run", "job", "sess", "doc")
        }
        self.namespace: set[str] = set()  # every handle the tool layer has issued (dense)
        self.tasks: list[Task] = []
        self.project = 0
        self.serial = 0
        self.counts = dict.fromkeys((*OUTCOMES, *EVENTS), 0)

    def _span(self, t, role, text, task=None, deps=()) -> Span:
        self.serial += 1
        s = Span(f"s{self.serial}", t, role, text, tuple(deps))
        if task is not None:
            task.span_ids.append(s.id)
        return s

    def _new_handle(self, prefix, rng) -> str:
        self.next_hex[prefix] += int(rng.integers(1, 3))  # gaps of 1-2: a dense, guessable space
        h = f"{prefix}_{self.next_hex[prefix]:04x}"
        self.namespace.add(h)
        return h

    def _open(self, kind=None) -> list[Task]:
        return [k for k in self.tasks if k.status == "open" and kind in (None, k.kind)]

    def reconstruct(self, task: Task, rng) -> tuple[str, str]:
        """(handle the agent will use, outcome): what the window gives it for this task."""
        m = self.m
        state = m.resolve(task.handle)
        if state == "bound":
            return task.handle, "ok"
        if self.lenient and any(p in m.retained for p in m.index.named_by.get(task.handle, ())):
            return task.handle, "copied"
        if state == "recoverable":
            try:
                m.restore(task.handle)
                return task.handle, "restored"
            except RestoreMissed:  # the store lost it: nothing left to rebuild the handle from
                self.counts["restore_missed"] += 1
        prefix, hexpart = task.handle.split("_")
        guess = f"{prefix}_{int(hexpart, 16) + int(rng.choice([-2, -1, 1, 2])):04x}"
        return guess, ("corrupt" if guess in self.namespace else "tool_error")

    def _step(self, goal: str, t: int):
        try:
            return self.m.step(goal, t)
        except ContextClosureError as e:  # raise mode: loud; the harness repairs and goes on
            self.counts[
                "raise_margin" if str(e).startswith("eviction margin") else "raise_dangling"
            ] += 1
            self.m.mode = "throttle"
            try:
                return self.m.step(goal, t)
            finally:
                self.m.mode = "raise"

    def _create(self, t, kind, prefix, call_text, body_of, rng, ready) -> list[Span]:
        h = self._new_handle(prefix, rng)
        k = Task(kind, h, self.project, ready)
        call = self._span(t, "call", call_text, k)
        role = "retrieval" if kind == "doc" else "result"
        self.tasks.append(k)
        return [call, self._span(t, role, json.dumps(body_of(h)), k, [call.id])]

    def _continue(self, t, rng) -> tuple[list[Span], str, str]:
        """Continue a task of the current project (else the oldest open task)."""
        cands = [k for k in self._open() if k.project == self.project] or self._open()[:1]
        k = cands[int(rng.integers(len(cands)))]
        h, outcome = self.reconstruct(k, rng)
        self.counts[outcome] += 1
        if outcome in ("corrupt", "tool_error") and self.m.resolve(h) == "missing":
            if not any(p in self.m.retained for p in self.m.index.named_by.get(h, ())):
                # a check before dispatch ("is this handle bound in the window?") refuses it
                self.counts["precheck_would_refuse"] += 1
        topic = TOPICS[k.project]
        text = {
            "job": f'poll(job="{h}")  # check on: {topic}',
            "session": f'query(session="{h}", sql="select rows to {topic}")',
            "doc": f'read_doc(doc="{h}")  # background to {topic}',
        }[k.kind]
        call = self._span(t, "call", text, k)
        if outcome == "tool_error":
            body, k.status = {"error": f"unknown handle {h}"}, "lost"
        elif outcome == "corrupt":
            body = {"job": h, "status": "done"} if k.kind == "job" else {k.kind: h, "rows": 7}
            k.status = "corrupt"  # the agent believes the wrong object answered
        else:
            k.uses += 1
            done = t >= k.ready if k.kind == "job" else k.uses >= USES[k.kind]
            body = {
                "job": {"job": h, "status": "done" if done else "running"},
                "session": {"session": h, "rows": int(rng.integers(10, 5000))},
                "doc": {"doc": h, "section": k.uses},
            }[k.kind]
            if done:
                k.status = "done"
        out = [call, self._span(t, "result", json.dumps(body), k, [call.id])]
        if k.status == "done" and k.kind == "job":
            out.append(self._span(t, "reasoning", f"{h} finished, so I can report on: {topic}", k))
        failing = text if outcome in ("corrupt", "tool_error") else ""
        return out, outcome, failing

    def turn(self, t: int) -> dict:
        rng = seeded(self.seed, t)
        action = rng.choice(
            list(ACTIONS), p=np.array(list(ACTIONS.values())) / sum(ACTIONS.values())
        )
        topic = TOPICS[self.project]
        spans, outcome, failing = [], "", ""
        if t == 0 or action == "switch":
            self.project = int(rng.integers(len(TOPICS))) if t else 0
            topic = TOPICS[self.project]
            spans.append(self._span(t, "user", f"Let us get back to the task: {topic}."))
        elif action == "submit" and len(self._open("job")) < self.max_open:
            prefix = str(rng.choice(["run", "job"]))
            variant = int(rng.integers(1, 9))
            spans += self._create(
                t,
                "job",
                prefix,
                f'submit_job(task="{topic}", variant={variant})',
                lambda h: {"id": h, "status": "queued"},
                rng,
                t + int(rng.integers(8, 40)),
            )
        elif action == "session" and not self._open("session"):
            spans += self._create(
                t,
                "session",
                "sess",
                f'open_session(db="warehouse", purpose="{topic}")',
                lambda h: {"id": h, "ttl": 30},
                rng,
                t + 30,
            )
        elif action == "search" and len(self._open("doc")) < self.max_open:
            spans += self._create(
                t,
                "doc",
                "doc",
                f'search_docs(query="{topic}")',
                lambda h: {
                    "id": h,
                    "title": f"notes: {topic}",
                    "text": f"how we {topic} in practice",
                },
                rng,
                t + 60,
            )
        elif action == "continue" and self._open():
            more, outcome, failing = self._continue(t, rng)
            spans += more
        elif action == "chat":
            spans.append(self._span(t, "user", str(rng.choice(CHATTER))))
        else:
            spans.append(
                self._span(
                    t, "reasoning", f"Thinking about how to {topic}: {rng.choice(THOUGHTS)}."
                )
            )
        for k in self.tasks:
            if k.status == "open" and k.kind == "session" and t >= k.ready:
                k.status = "expired"
        self.m.add(*spans)
        raises = self.counts["raise_dangling"] + self.counts["raise_margin"]
        cyc = self._step(TOPICS[self.project], t)
        rep = self.m.report()
        m = self.m
        lost = sum(
            any(m.index.definer.get(h, len(m.index)) < m.index.pos[i] for i in ids)
            for h, ids in rep.orphans.items()
        )
        return {
            "turn": t,
            "used": m.used,
            "occupancy": m.occupancy,
            "margin": np.nan if cyc is None or cyc.margin is None else cyc.margin,
            "cycle": cyc is not None,
            "throttled": bool(cyc is not None and cyc.throttled),
            # a window orphan named after its definition was lost to eviction; one named before
            # any definition is the agent's own guess (a tool error), not the manager's doing
            "orphans": lost,
            "undefined": len(rep.orphans) - lost,
            "asymmetric": len(rep.asymmetric),
            "outcome": outcome,
            "silent": int(outcome == "corrupt"),
            "raises": self.counts["raise_dangling"] + self.counts["raise_margin"] - raises,
            "closure_tokens": m.closure_tokens,
            "over": max(m.used - m.capacity, 0),
            "failing_call": failing,
        }


def label(manager: str, mode: str = "throttle", enforce: bool = True, miss: float = 0.0) -> str:
    """A run's label: the manager, with '-raise', '-off' or '-miss<p>' when run so."""
    return (
        manager
        + ("-off" if not enforce else "")
        + ("-raise" if mode == "raise" else "")
        + (f"-miss{miss:g}" if miss else "")
    )


def simulate_run(
    manager: str,
    seed: int,
    turns: int = 300,
    capacity: int = 400,
    encoder: str = "lexical",
    *,
    mode: str = "throttle",
    enforce: bool = True,
    lenient: bool = True,
    **kw,
) -> Run:
    """One seeded run of the agent under one manager."""
    mode = mode if manager == "gate" else "throttle"  # only the gate has a raise mode
    m = make_manager(manager, capacity, encoder=encoder, mode=mode, enforce=enforce, **kw)
    agent = PlanAgent(m, seed, lenient=lenient)
    rows = [agent.turn(t) for t in range(turns)]
    tl = pd.DataFrame(rows)
    name = label(manager, mode, enforce, kw.get("miss", 0.0))
    tl.insert(0, "seed", seed)
    tl.insert(0, "manager", name)
    jobs = [k for k in agent.tasks if k.kind == "job"]
    return Run(
        name,
        seed,
        tl,
        tuple(m.cycles),
        dict(agent.counts),
        len(jobs),
        sum(k.status == "done" for k in jobs),
        tuple(m.over_budget),
    )


def simulate(managers=tuple(MANAGERS), seeds=range(10), *args, **kw) -> list[Run]:
    """The same seeded runs under every manager (`args`, `kw`: as simulate_run takes them)."""
    return [simulate_run(m, s, *args, **kw) for m in managers for s in seeds]


def natural_language_only(spans, patterns: Patterns = CLOSURE_PATTERNS) -> list[Span]:
    """The decision-boundary control's log: the user and reasoning spans that name no handle,
    as a fresh log (no calls, results, documents or dependencies)."""
    return [
        Span(s.id, s.turn, s.role, s.text)
        for s in spans
        if s.role in ("user", "reasoning") and not any(patterns.scan(s.text))
    ]


def episode_log(seed: int, turns: int = 300, capacity: int = 10**9) -> list[Span]:
    """The full log the agent writes on one seed when nothing is evicted (the episodes the log
    generators and the decision-boundary control start from)."""
    m = make_manager("relevance", capacity)
    agent = PlanAgent(m, seed)
    for t in range(turns):
        agent.turn(t)
    return list(m.index.spans)


def long_log(n_spans: int, seed: int = 0) -> list[Span]:
    """A long synthetic log of the agent's span shapes (submits, polls, chat, reasoning, project
    switches) with O(1) work per span, for scaling runs: the plan agent itself keeps per-task
    state that a 100,000-span log would make slow to generate."""
    rng = seeded(seed, LONG_LOG_STREAM)
    spans: list[Span] = []
    nxt, jobs, turn, project = 0x10000, [], 0, 0

    def add(role, text, deps=()):
        spans.append(Span(f"s{len(spans)}", turn, role, text, tuple(deps)))
        return spans[-1].id

    add("user", f"Please {TOPICS[0]}.")
    draws = iter(rng.random(4 * n_spans + 16).tolist())
    while len(spans) < n_spans:
        turn += 1
        a, topic = next(draws), TOPICS[project]
        if a < 0.05:
            project = int(next(draws) * len(TOPICS))
            add("user", f"Let us get back to the task: {TOPICS[project]}.")
        elif a < 0.17:
            nxt += 1 + int(next(draws) * 2)
            h = f"run_{nxt:05x}"
            c = add("call", f'submit_job(task="{topic}", variant={1 + int(next(draws) * 8)})')
            add("result", json.dumps({"id": h, "status": "queued"}), [c])
            jobs.append(h)
        elif a < 0.40 and jobs:
            h = jobs[-1 - int(next(draws) * min(3, len(jobs)))]
            c = add("call", f'poll(job="{h}")  # check on: {topic}')
            add("result", json.dumps({"job": h, "status": "running"}), [c])
        elif a < 0.70:
            add("user", CHATTER[int(next(draws) * len(CHATTER))])
        else:
            add("reasoning", f"Thinking about how to {topic}: {THOUGHTS[int(next(draws) * 4)]}.")
    return spans[:n_spans]

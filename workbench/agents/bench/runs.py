"""Agents under a budget, a simulation: the scripted world (`workbench.agents.bench.world`) driven
through each framework's real agent loop, under our closure adapters and under the framework's
own context management (`policies`), at one token budget.

Per run: the person's turns go in one at a time (a LangChain thread with a checkpointer, an Agents
SDK session, a pydantic-ai message history); the scripted model reads each request, which the
provider rules (`workbench.agents.bench.judge`, written apart from the trimmer) judge first: a
request a provider would reject ends the run, as a 400 would. Counted: requests rejected, handles
a request names without its definition (the closure check's orphans), silent corruptions (a
guessed handle that exists, acted on), loud tool errors, tasks done (fetched from the right job),
tokens sent, and our hook's own time per call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd

from workbench.agents.bench import drivers
from workbench.agents.bench.policies import POLICIES, Policy
from workbench.agents.bench.world import Decision, World, decide, script
from workbench.agents.core import Records, tokens
from workbench.closure.logs import LogError, check, read
from workbench.common.stats import interval, ratio_interval

# the provider's context window, as a multiple of the budget every policy is given: a little
# room, as people leave it, for counters that differ in the last few tokens
WINDOW = 1.1
COLUMNS = ("framework", "policy", "kind", "editor", "seed", "budget", "calls", "rejected", "rejected_pairing",
           "orphan_handles",
           "silent", "tool_errors", "guessed", "tasks", "tasks_done", "lost_answers", "tokens_sent",
           "hook_ms")  # fmt: skip


class Rejected(RuntimeError):
    """The provider answered 400: the request broke its rules."""


@dataclass
class Tally:
    """One run's counts, kept by the scripted model and the tools."""

    framework: str
    policy: Policy
    seed: int
    budget: int
    world: World = field(init=False)
    turn: int = 0
    calls: int = 0
    rejected: int = 0
    rejected_pairing: int = 0
    orphan_handles: int = 0
    guessed: int = 0
    tokens_sent: int = 0
    want: str | None = None
    acted: int = -1  # the last turn the model called a tool in
    lost: int = 0  # tool answers the model asked for and its next request lacked
    named: dict = field(default_factory=dict)  # handle -> when the model first named it

    def __post_init__(self):
        self.world = World(self.seed)

    def request(self, view, problems, log_obj, fmt) -> object:
        """Judge the request, count it, and let the scripted model decide."""
        self.calls += 1
        if problems:
            self.rejected += 1
            if any("context window" not in p for p in problems):
                self.rejected_pairing += 1  # a pairing or order rule, not the window alone
            raise Rejected("; ".join(problems))
        try:
            log = read(log_obj, fmt)
            rep = check(log)
            # a handle the request names without what defined it, where a tool result showed it
            # before the model first named it: a definition the context editing lost (a guess,
            # named before any result showed it, is counted apart)
            self.orphan_handles += sum(1 for h in rep.orphan_handles if self._lost(h))
            self.tokens_sent += tokens(log)
        except LogError:
            pass
        d = decide(view, self.seed, self.turn * 100 + self.calls)
        if d.tool is not None and self.acted == self.turn:
            # it called a tool this turn already and its answer is not in the request (an edit
            # cut it): it says so rather than call again
            d = Decision(text="I could not see what the tool answered.")
            self.lost += 1
        if d.tool is not None:
            self.acted = self.turn
        self.want = d.task
        self.guessed += d.guessed
        return d

    def _lost(self, h: str) -> bool:
        shown, named = self.world.shown.get(h), self.named.get(h)
        return shown is not None and (named is None or shown < named)

    def tool(self, name: str, args: dict) -> str:
        h = args.get("job_id")
        if h:  # the model names it: noted before the tool runs (and perhaps shows it)
            self.named.setdefault(h, self.world.tick + 1)  # the call about to run
        return self.world.call(name, args, self.turn * 100 + self.calls, self.want)

    def row(self, tasks: int, records: list[Records]) -> dict:
        c = self.world.counts
        secs = [r.seconds for recs in records for r in recs]
        return {
            "framework": self.framework, "policy": self.policy.name,
            "kind": self.policy.kind, "editor": self.policy.editor, "seed": self.seed,
            "budget": self.budget, "calls": self.calls, "rejected": self.rejected,
            "rejected_pairing": self.rejected_pairing,
            "orphan_handles": self.orphan_handles, "silent": c["corrupt"],
            "tool_errors": c["tool_error"], "guessed": self.guessed, "tasks": tasks,
            "tasks_done": c["done"], "lost_answers": self.lost, "tokens_sent": self.tokens_sent,
            "hook_ms": 1000 * sum(secs) / len(secs) if secs else float("nan"),
        }  # fmt: skip


def _drive(turns, one_turn, tally: Tally) -> None:
    for k, (_, _, text) in enumerate(turns):
        tally.turn = k
        try:
            one_turn(text)
        except Rejected:
            return  # a 400 ends the run


def run(framework: str, policy: Policy, seed: int, budget: int, tasks: int = 3) -> dict:
    """One scripted run through one framework's loop under one policy."""
    if policy not in POLICIES.get(framework, ()):
        raise ValueError(f"unknown policy {policy!r} for {framework!r}")
    tally = Tally(framework, policy, seed, budget)
    turns = script(seed, tasks)
    one_turn, records = drivers.DRIVERS[framework](policy, budget, int(budget * WINDOW), tally)
    _drive(turns, one_turn, tally)
    return tally.row(tasks, records)


def sweep(seeds, budgets, frameworks=tuple(POLICIES), names=None, progress=None) -> pd.DataFrame:
    """Every policy of each framework (those shown as `names`, if given) at each budget over the
    seeds; `progress(done, total)` is called after each run."""
    todo = [(fw, p, s, b) for fw in frameworks for p in POLICIES[fw]
            if names is None or p.name in names for b in budgets for s in seeds]  # fmt: skip
    rows = []
    for k, args in enumerate(todo):
        rows.append(run(*args))
        if progress is not None:
            progress(k + 1, len(todo))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per framework, budget and policy: runs, requests rejected, runs with a rejection, orphaned
    handles, silent corruptions, tasks done (share, with its bootstrap interval over seeds) and
    mean tokens sent per call."""
    out = []
    keys = ["framework", "budget", "policy", "kind", "editor"]
    for (fw, b, p, kind, editor), g in df.groupby(keys, sort=False):
        done = ratio_interval(g["tasks_done"].to_numpy(), g["tasks"].to_numpy())
        silent = interval(g["silent"].to_numpy())
        out.append({
            "framework": fw, "budget": b, "policy": p, "kind": kind, "editor": editor,
            "runs": len(g),
            "rejected": int(g["rejected"].sum()), "rejected_pairing": int(g["rejected_pairing"].sum()),
            "orphan_handles": int(g["orphan_handles"].sum()), "silent": int(g["silent"].sum()),
            "silent_per_run": silent.mean, "silent_lo": silent.lo, "silent_hi": silent.hi,
            "tasks_done": done.mean, "done_lo": done.lo, "done_hi": done.hi,
            "tokens_per_call": g["tokens_sent"].sum() / max(g["calls"].sum(), 1),
        })  # fmt: skip
    return pd.DataFrame(out)


def to_json(df: pd.DataFrame) -> str:
    return json.dumps(df.to_dict(orient="records"), indent=1, default=float)

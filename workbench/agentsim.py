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

from workbench.closure import Span
from workbench.managers import FLOOR, MANAGERS, make_manager

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


# --- reports ------------------------------------------------------------------------------------


def margin_signal(cycles, floor: float = FLOOR, horizon: int = 2) -> dict:
    """How well `margin < floor` at cycle k predicts a new closure violation in cycles k+1..k+horizon.

    A violation at cycle j: the proposed eviction orphans a handle that was not already orphaned
    after cycle j-1 (for relevance-only it is committed; a gate catches and repairs it).
    Lead time: cycles (and turns) from the earliest flag in the window to the violation.
    """
    m = np.array([np.nan if c.margin is None else c.margin for c in cycles])
    turns = np.array([c.turn for c in cycles])
    prev = [frozenset()] + [frozenset(c.orphans) for c in cycles[:-1]]
    event = np.array([bool(set(c.proposal_orphans) - p) for c, p in zip(cycles, prev, strict=True)])
    flag = m < floor  # nan compares False: a cycle that evicted nothing raises no flag
    n = len(cycles)
    ahead = np.array([event[k + 1 : k + 1 + horizon].any() for k in range(n)], dtype=bool)
    leads_c, leads_t, caught = [], [], 0
    for j in np.flatnonzero(event):
        ks = [k for k in range(max(j - horizon, 0), j) if flag[k]]
        if ks:
            caught += 1
            leads_c.append(j - ks[0])
            leads_t.append(int(turns[j] - turns[ks[0]]))
    return {
        "cycles": n,
        "flags": int(flag.sum()),
        "violations": int(event.sum()),
        "true_flags": int((flag & ahead).sum()),
        "caught": caught,
        "base_rate_cycles": int(ahead.sum()),
        "lead_cycles": leads_c,
        "lead_turns": leads_t,
    }


def _ratio(a, b):
    return float(a) / b if b else float("nan")


def summarize(runs) -> pd.DataFrame:
    """One row per manager over all seeds: failures, closure token overhead, margin signal."""
    ref = {r.seed: r.timeline.used.mean() for r in runs if r.manager == "relevance"}
    rows = []
    for name in dict.fromkeys(r.manager for r in runs):
        group = [r for r in runs if r.manager == name]
        tl = pd.concat([r.timeline for r in group])
        sig = [margin_signal(r.cycles) for r in group]
        tot = {
            k: sum(s[k] for s in sig)
            for k in ("cycles", "flags", "violations", "true_flags", "caught", "base_rate_cycles")
        }
        lead_c = [x for s in sig for x in s["lead_cycles"]]
        lead_t = [x for s in sig for x in s["lead_turns"]]
        extra = [r.timeline.used.mean() / ref[r.seed] - 1 for r in group if r.seed in ref]
        rows.append(
            {
                "manager": name,
                "seeds": len(group),
                "turns": len(tl),
                "invalid_per_turn": tl.invalid.mean(),
                "invalid_calls": int(tl.invalid.sum()),
                "silent_corruptions": int(tl.corrupt.sum()),
                "orphan_turns": float((tl.orphans > 0).mean()),
                "mean_tokens": tl.used.mean(),
                "closure_token_share": _ratio(tl.closure_tokens.sum(), tl.used.sum()),
                "extra_tokens_vs_relevance": float(np.mean(extra)) if extra else float("nan"),
                "restores": sum(r.restores for r in group),
                "jobs_done_share": _ratio(
                    sum(r.jobs_done for r in group), sum(r.jobs_submitted for r in group)
                ),
                "cycles": tot["cycles"],
                "violations": tot["violations"],
                "margin_flags": tot["flags"],
                "margin_precision": _ratio(tot["true_flags"], tot["flags"]),
                "margin_recall": _ratio(tot["caught"], tot["violations"]),
                "base_rate": _ratio(tot["base_rate_cycles"], tot["cycles"]),
                "lead_cycles": float(np.mean(lead_c)) if lead_c else float("nan"),
                "lead_turns": float(np.mean(lead_t)) if lead_t else float("nan"),
            }
        )
    return pd.DataFrame(rows).set_index("manager")


def timeline_frame(runs, seed: int, managers=("relevance", "gate")) -> pd.DataFrame:
    """Long-form timeline of one seed: occupancy, margin and orphan count per turn and manager."""
    parts = []
    for r in runs:
        if r.seed != seed or r.manager not in managers:
            continue
        tl = r.timeline
        for metric in ("occupancy", "margin", "orphans"):
            parts.append(
                pd.DataFrame(
                    {
                        "manager": r.manager,
                        "turn": tl.turn,
                        "metric": metric,
                        "value": tl[metric].astype(float),
                        "failing_call": tl.failing_call,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def timeline_chart(frame: pd.DataFrame, floor: float = FLOOR):
    """Occupancy, margin and orphans per turn (rows) for each manager (columns); red marks are
    the turns with an invalid or corrupted call."""
    import altair as alt

    base = alt.Chart(frame).encode(x=alt.X("turn:Q", title="turn"))
    line = base.mark_line(strokeWidth=1).encode(y=alt.Y("value:Q", title=None))
    fails = (
        base.transform_filter("datum.failing_call != ''")
        .mark_rule(color="#d62728", opacity=0.35)
        .encode(tooltip=["failing_call:N"])
    )
    pts = (
        base.transform_filter(f"datum.metric == 'margin' && datum.value < {floor!r}")
        .mark_point(size=8, color="#ff7f0e", filled=True)
        .encode(y="value:Q")
    )
    return (
        alt.layer(fails, line, pts, data=frame)
        .properties(width=320, height=110)
        .facet(
            row=alt.Row("metric:N", sort=["occupancy", "margin", "orphans"], title=None),
            column=alt.Column("manager:N", sort=list(MANAGERS), title=None),
        )
        .resolve_scale(y="independent")
        .properties(
            title=alt.TitleParams(
                "One simulated run: window occupancy, eviction margin and orphaned handles per turn",
                subtitle=[
                    "columns: window manager; red rules: a turn whose tool call failed "
                    "(invalid or silently corrupted handle);",
                    f"orange dots: eviction margin below the floor {floor:g}; occupancy "
                    "is retained tokens / capacity",
                ],
                anchor="start",
            )
        )
    )


def note_figures(path=None) -> dict:
    """The closure note's published figures (repo copy of the reference file)."""
    from pathlib import Path

    path = (
        Path(path)
        if path
        else Path(__file__).resolve().parents[1] / "data" / "reference" / "paper_figures.json"
    )
    return json.loads(path.read_text(encoding="utf-8"))["closure_note"]


def failures(run: Run) -> pd.DataFrame:
    """The failing calls of one run, with the window's orphan count and the last two margins."""
    tl = run.timeline.set_index("turn")
    cyc = pd.DataFrame(
        {
            "turn": [c.turn for c in run.cycles],
            "margin": [np.nan if c.margin is None else c.margin for c in run.cycles],
        }
    )
    rows = []
    for t in tl.index[tl.failing_call != ""]:
        prior = cyc[cyc.turn < t].margin.tail(2).tolist()
        rows.append(
            {
                "turn": int(t),
                "kind": "corrupt" if tl.corrupt[t] else "invalid",
                "orphans_before": int(tl.orphans.get(t - 1, 0)),
                "margins_before": " ".join("n/a" if np.isnan(m) else f"{m:.3f}" for m in prior),
                "call": tl.failing_call[t],
            }
        )
    return pd.DataFrame(rows, columns=["turn", "kind", "orphans_before", "margins_before", "call"])


def story(run: Run) -> dict:
    """The note's observed-run numbers for one run: first orphan, first failure, margins."""
    tl = run.timeline
    orph, fail = tl.turn[tl.orphans > 0], tl.turn[tl.failing_call != ""]
    first_fail = int(fail.iloc[0]) if len(fail) else None
    m = tl[tl.margin.notna() & ((tl.turn < first_fail) if first_fail is not None else True)].margin
    return {
        "turns": int(len(tl)),
        "first_orphan_turn": int(orph.iloc[0]) if len(orph) else None,
        "failure_surfaced_turn": first_fail,
        "margin_before": float(m.iloc[:-2].median()) if len(m) > 2 else None,
        "margin_at_failure": float(m.iloc[-1]) if len(m) else None,
        "invalid_tool_calls_per_turn": float((tl.invalid + tl.corrupt).mean()),
    }


def note_comparison(run: Run, note: dict | None = None) -> pd.DataFrame:
    """The note's observed run beside one of ours (margin_before: median margin of the cycles
    before the last two ahead of the first failure; margin_at_failure: the last one)."""
    note = note or note_figures()
    ref = dict(note["observed_run"])
    ref["invalid_tool_calls_per_turn"] = note["with_closure_pass"][
        "invalid_tool_calls_per_turn_before"
    ]
    ours = story(run)
    keys = list(ours)
    fmt = lambda v: "n/a" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))  # noqa: E731
    return pd.DataFrame(
        {
            "note": [fmt(ref.get(k)) for k in keys],
            f"ours ({run.manager}, seed {run.seed})": [fmt(ours[k]) for k in keys],
        },
        index=keys,
    )

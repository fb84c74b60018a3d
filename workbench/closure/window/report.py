"""Reports over simulated runs: outcomes and cost per manager with bootstrap intervals over seeds,
the margin signal, the decision-boundary control, timelines, stories."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.closure.window.agent import Run, episode_log, natural_language_only, simulate
from workbench.closure.window.cycle import FLOOR
from workbench.closure.window.managers import make_manager
from workbench.common import stats
from workbench.common.reference import paper_figures

BOOT = 2000  # bootstrap resamples over seeds


def bootstrap(values, boot: int = BOOT, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of the mean over seeds, the seed the resampled unit
    (`common.stats`); a 2-column array is a ratio of sums (numerator, denominator)."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan")
    if v.ndim == 2:
        _, lo, hi = stats.ratio_bootstrap(v[:, 0], v[:, 1], boot, seed=seed)
    else:
        _, lo, hi = stats.bootstrap(v, boot, seed=seed)
    return float(lo[0]), float(hi[0])


def run_rows(runs) -> pd.DataFrame:
    """One row per run (manager x seed), the agent's failures split by cause:

    - the note's failure mode, a kept reference whose binding was evicted: turns whose window
      held one (`evicted_binding_turns`) and calls the agent made from one by copying the handle
      (`dangling_calls`, right here because the simulated tool accepts the copied handle);
    - the agent's own: a task remembered without any span of its handle in the window, rebuilt
      by a guess the tool accepted (`silent`, a corruption) or refused (`tool_errors`);
    - recoveries apart from errors: tombstone restores (`restores`), restores the store missed
      (`restore_missed`, each then a guess), gate raises (`raises`)."""
    ref = {r.seed: r.timeline.used.mean() for r in runs if r.manager == "relevance"}
    rows = []
    for r in runs:
        tl, c = r.timeline, r.counts
        rows.append(
            {
                "manager": r.manager,
                "seed": r.seed,
                "turns": len(tl),
                "evicted_binding_turns": int((tl.orphans > 0).sum()),
                "dangling_calls": c["copied"],
                "silent": c["corrupt"],
                "tool_errors": c["tool_error"],
                "restores": c["restored"],
                "restore_missed": c["restore_missed"],
                "raises": c["raise_dangling"] + c["raise_margin"],
                "raises_dangling": c["raise_dangling"],
                "raises_margin": c["raise_margin"],
                "precheck_would_refuse": c["precheck_would_refuse"],
                "jobs_submitted": r.jobs_submitted,
                "jobs_done": r.jobs_done,
                "mean_tokens": tl.used.mean(),
                "closure_tokens": tl.closure_tokens.mean(),
                "extra_tokens_vs_relevance": tl.used.mean() / ref[r.seed] - 1
                if r.seed in ref
                else float("nan"),
                "over_budget_turns": int((tl.over > 0).sum()),
                "max_over": int(tl.over.max()),
            }
        )
    return pd.DataFrame(rows)


def _interval(col, boot, seed):
    lo, hi = bootstrap(col, boot, seed)
    return float(np.mean(col)), lo, hi


PER_RUN = (  # per-run means with a bootstrap interval over seeds
    "evicted_binding_turns",
    "dangling_calls",
    "silent",
    "tool_errors",
    "restores",
    "raises",
    "jobs_done",
    "extra_tokens_vs_relevance",
)
TOTALS = (
    "dangling_calls",
    "silent",
    "tool_errors",
    "restores",
    "restore_missed",
    "raises_dangling",
    "raises_margin",
    "precheck_would_refuse",
)
CLOSERS = ("gate", "atomic", "tombstone")  # the managers that keep the window closed


def by_construction(manager: str) -> str:
    """What is zero (or equal) by construction in a manager's row, and why (shown beside it)."""
    base = manager.split("-")[0]
    notes = []
    if base in CLOSERS and "-off" not in manager:
        notes.append("evicted-binding turns and dangling calls are 0: closure is enforced")
    if base == "tombstone" and "-off" not in manager and "-miss" not in manager:
        notes.append("silent is 0: every evicted binding has a tombstone and every restore works")
    if manager == "gate-raise":
        notes.append("silent equals gate's: after each raise the harness repairs as gate does")
    return "; ".join(notes)


def outcome_table(runs, boot: int = BOOT, seed: int = 0) -> pd.DataFrame:
    """Per manager: each cause of failure and each recovery per run (300 turns by default), a
    mean over seeds with a 95% bootstrap interval over seeds; totals; the share of submitted jobs
    completed; extra tokens against relevance-only on the same seeds; and what in the row is so
    by construction."""
    rows = run_rows(runs)
    out = []
    for name, g in rows.groupby("manager", sort=False):
        rec = {"manager": name, "seeds": len(g)}
        for col in PER_RUN:
            rec[col], rec[f"{col}_lo"], rec[f"{col}_hi"] = _interval(g[col].to_numpy(), boot, seed)
        share = g[["jobs_done", "jobs_submitted"]].to_numpy()
        rec["jobs_done_share"] = share[:, 0].sum() / share[:, 1].sum()
        rec["jobs_done_share_lo"], rec["jobs_done_share_hi"] = bootstrap(share, boot, seed)
        for col in TOTALS:
            rec[f"{col}_total"] = int(g[col].sum())
        ct = g[["closure_tokens", "mean_tokens"]].to_numpy()
        rec["closure_token_share"] = ct[:, 0].sum() / ct[:, 1].sum()
        rec["evicted_binding_turns_total"] = int(g.evicted_binding_turns.sum())
        rec["over_budget_turns"] = int(g.over_budget_turns.sum())
        rec["max_over"] = int(g.max_over.max())
        rec["by_construction"] = by_construction(name)
        out.append(rec)
    return pd.DataFrame(out).set_index("manager")


def study_runs(managers, seeds, turns, capacity, encoder, misses=(0.1, 0.25, 0.5)) -> list:
    """Notebook 07's runs: every manager; the gate in raise mode; gate, atomic and tombstone with
    closure enforcement off; the tombstone manager with a store that misses each share of
    restores in `misses`."""
    runs = simulate(managers, seeds, turns, capacity, encoder)
    runs += simulate(["gate"], seeds, turns, capacity, encoder, mode="raise")
    runs += [
        r for m in CLOSERS for r in simulate([m], seeds, turns, capacity, encoder, enforce=False)
    ]
    runs += [
        r for p in misses for r in simulate(["tombstone"], seeds, turns, capacity, encoder, miss=p)
    ]
    return runs


# --- the margin as an early warning --------------------------------------------------------------


def margin_signal(cycles, floor: float = FLOOR, horizon: int = 2) -> dict:
    """How well `margin < floor` at cycle k predicts a new closure violation in cycles k+1..k+horizon.

    A violation at cycle j: the proposed eviction orphans a handle that was not already orphaned
    after cycle j-1 (for relevance-only it is committed; a gate catches and repairs it).
    Lead time: cycles (and turns) from the earliest flag in the window to the violation.
    """
    m = np.array([np.nan if c.margin is None else c.margin for c in cycles])
    turns = np.array([c.turn for c in cycles])
    prev = [frozenset()] + [frozenset(c.orphans) for c in cycles[:-1]]
    event = np.array(
        [bool(set(c.proposal_orphans) - p) for c, p in zip(cycles, prev, strict=True)], dtype=bool
    )
    flag = m < floor  # nan compares False: a cycle that evicted nothing raises no flag
    tie = np.array([c.tie for c in cycles], dtype=bool)  # the cut fell between equal scores
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
        "tie_flags": int((flag & tie).sum()),
        "strict_flags": int((flag & ~tie).sum()),
        "true_strict_flags": int((flag & ~tie & ahead).sum()),
        "violations": int(event.sum()),
        "true_flags": int((flag & ahead).sum()),
        "caught": caught,
        "base_rate_cycles": int(ahead.sum()),
        "lead_cycles": leads_c,
        "lead_turns": leads_t,
    }


def margin_table(runs, managers=("relevance", "gate"), boot: int = BOOT, seed: int = 0):
    """Per manager: precision of the flag `margin < floor` (a violation within two cycles), and
    again with exact ties counted apart (a margin of exactly 0: the cut fell between two spans
    of equal score, e.g. a repeated chat line), the ties' share of the flags, the base rate (the
    precision of flagging every cycle), recall, lead time; intervals by a bootstrap over seeds of
    the ratio of sums."""
    out = []
    for name in managers:
        sig = [margin_signal(r.cycles) for r in runs if r.manager == name]
        if not sig:
            continue
        arr = {
            "precision": [(s["true_flags"], s["flags"]) for s in sig],
            "precision_no_ties": [(s["true_strict_flags"], s["strict_flags"]) for s in sig],
            "tie_share": [(s["tie_flags"], s["flags"]) for s in sig],
            "base_rate": [(s["base_rate_cycles"], s["cycles"]) for s in sig],
            "recall": [(s["caught"], s["violations"]) for s in sig],
        }
        rec = {"manager": name, "seeds": len(sig)}
        for k, pairs in arr.items():
            a = np.array(pairs, dtype=float)
            rec[k] = a[:, 0].sum() / a[:, 1].sum() if a[:, 1].sum() else float("nan")
            rec[f"{k}_lo"], rec[f"{k}_hi"] = bootstrap(a, boot, seed)
        for name, true, flags in (
            ("lift", "true_flags", "flags"),
            ("lift_no_ties", "true_strict_flags", "strict_flags"),
        ):  # per seed: the flag's precision minus the base rate
            lift = [
                s[true] / s[flags] - s["base_rate_cycles"] / s["cycles"]
                for s in sig
                if s[flags] and s["cycles"]
            ]
            rec[name] = float(np.mean(lift)) if lift else float("nan")
            rec[f"{name}_lo"], rec[f"{name}_hi"] = bootstrap(lift, boot, seed)
        for k in ("cycles", "flags", "tie_flags", "strict_flags", "violations", "caught"):
            rec[k] = sum(s[k] for s in sig)
        leads = [x for s in sig for x in s["lead_turns"]]
        rec["lead_turns"] = float(np.mean(leads)) if leads else float("nan")
        out.append(rec)
    return pd.DataFrame(out).set_index("manager")


# --- the decision-boundary control ---------------------------------------------------------------


def _lockstep(spans, capacity, encoder):
    """Replay one log under relevance-only and the gate side by side, turn by turn."""
    rel = make_manager("relevance", capacity, encoder=encoder)
    # the closure step alone: no margin throttle, which would differ from relevance-only for
    # reasons that have nothing to do with handles
    gate = make_manager("gate", capacity, encoder=encoder, floor=-np.inf)
    goal = next(s.text for s in spans if s.role == "user")
    by_turn: dict[int, list] = {}
    for s in spans:
        by_turn.setdefault(s.turn, []).append(s)
    same = cycles = open_turns = closure_max = 0
    for t in sorted(by_turn):
        rel.add(*by_turn[t])
        gate.add(*by_turn[t])
        a, b = rel.step(goal, t), gate.step(goal, t)
        if a is not None or b is not None:
            cycles += 1
            same += (a.evicted if a else ()) == (b.evicted if b else ())
        rep = rel.report()
        open_turns += bool(rep.orphans or rep.missing_deps)
        closure_max = max(closure_max, gate.closure_tokens)
    return {
        "spans": len(spans),
        "cycles": cycles,
        "identical_evictions": same / cycles if cycles else 1.0,
        "gate_pinned_spans": sum(len(c.pinned) for c in gate.cycles),
        "gate_closure_tokens_max": closure_max,
        "relevance_open_turns": open_turns,
    }


def boundary_control(seeds, turns: int = 300, capacity: int = 400, encoder="lexical"):
    """The note's decision boundary, measured: on a log of natural language only (the agent's user
    and reasoning spans that name no handle), relevance eviction loses nothing that closure
    protects if (1) relevance-only's window has no orphaned reference or missing dependency after
    any turn, (2) the gate (its closure step; the margin throttle off) pins nothing and holds no
    closure tokens, and (3) it evicts what relevance-only evicts on every cycle. The same seeds' full logs (tool calls included) are the
    contrast, where (1)-(3) can fail."""
    rows = []
    for seed in seeds:
        full = episode_log(seed, turns)
        for kind, log in (("natural language only", natural_language_only(full)), ("full", full)):
            rec = _lockstep(log, capacity, encoder)
            rows.append({"seed": seed, "log": kind, **rec})
    return pd.DataFrame(rows)


# --- one run: timeline, failures, the note's story -----------------------------------------------


def timeline_frame(runs, seed: int, managers=("relevance", "gate", "tombstone")) -> pd.DataFrame:
    """Long-form timeline of one seed: occupancy, margin and evicted-binding orphans per turn."""
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
                        "kind": tl.outcome,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def note_figures() -> dict:
    """The closure note's published figures."""
    return paper_figures("closure")


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
                "kind": tl.outcome[t],
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
        "invalid_tool_calls_per_turn": float((tl.failing_call != "").mean()),
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

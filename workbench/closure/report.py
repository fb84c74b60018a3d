"""Reports over simulated runs: outcomes and cost per manager with bootstrap intervals over seeds,
the margin signal, the decision-boundary control, timelines, stories."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.closure.agent import Run, episode_log, natural_language_only, simulate
from workbench.closure.managers import make_manager
from workbench.closure.window import FLOOR
from workbench.common.reference import paper_figures

BOOT = 2000  # bootstrap resamples over seeds


def bootstrap(values, boot: int = BOOT, seed: int = 0, stat=np.mean) -> tuple[float, float]:
    """95% percentile interval of `stat` over seeds resampled with replacement (rows of `values`
    are seeds; a 2-column array is a ratio of sums: numerator, denominator)."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(v), size=(boot, len(v)))
    if v.ndim == 2:
        num, den = v[idx, 0].sum(axis=1), v[idx, 1].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            stats = num / den
        stats = stats[np.isfinite(stats)]
        if not len(stats):
            return float("nan"), float("nan")
    else:
        stats = stat(v[idx], axis=1)
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return float(lo), float(hi)


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


def boundary_note(boundary: pd.DataFrame) -> str:
    """What the decision-boundary control shows, and which half of it holds by construction."""
    nl = boundary[boundary.log == "natural language only"]
    full = boundary[boundary.log == "full"]
    held = (
        int(nl.relevance_open_turns.sum()) == 0
        and int(nl.gate_pinned_spans.sum()) == 0
        and float(nl.identical_evictions.min()) == 1.0
    )
    return (
        f"On the natural-language-only logs relevance eviction "
        f"{'lost nothing closure protects' if held else 'did lose something closure protects'}"
        " (no open turn, nothing pinned, the same evictions as the gate's closure step on every "
        "cycle). That half holds by construction: no span of those logs names a handle, so there "
        "is nothing to orphan or pin. The full logs are the contrast that could fail and does: "
        f"{int(full.relevance_open_turns.sum())} open turns under relevance-only, "
        f"{int(full.gate_pinned_spans.sum())} spans the gate pinned, identical evictions on "
        f"{full.identical_evictions.mean():.0%} of cycles."
    )


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


# --- notebook 07's prose, computed from the numbers it states -------------------------------------


def _ci(rec: dict, key: str, digits: int = 1, pct: bool = False) -> str:
    f = (lambda v: f"{v:+.1%}") if pct else (lambda v: f"{v:.{digits}f}")
    return f"{f(rec[key])} [{f(rec[key + '_lo'])}, {f(rec[key + '_hi'])}]"


def outcome_note(table: pd.DataFrame, seeds: int, turns: int) -> str:
    """The outcomes by cause: the note's failure mode apart from the agent's own failures."""
    by = table.to_dict("index")
    closers = [m for m in CLOSERS if m in by]
    rel = by["relevance"]
    text = (
        f"Over {seeds} seeds of {turns} turns, relevance-only eviction left a reference to an "
        f"evicted binding in the window on {_ci(rel, 'evicted_binding_turns')} turns per run (the "
        f"note's failure mode); the agent called from such a reference {_ci(rel, 'dangling_calls')} "
        "times per run (the simulated tool accepts a copied handle, so these calls are right, but "
        f"each relied on a binding the window no longer held). Its own failures, a task remembered "
        f"without any span of its handle: {_ci(rel, 'silent')} silent corruptions and "
        f"{_ci(rel, 'tool_errors')} tool errors per run. "
    )
    zero = [m for m in closers if by[m]["evicted_binding_turns_total"] == 0]
    text += (
        f"Under {', '.join(f'`{m}`' for m in zero)} no turn held such a reference: zero by "
        "construction, since these managers keep the window closed after every turn. "
        if zero
        else ""
    )
    text += " ".join(
        f"`{m}`: {_ci(by[m], 'silent')} silent, {_ci(by[m], 'tool_errors')} tool errors, "
        f"{_ci(by[m], 'restores')} restores."
        for m in closers
    )
    still = [m for m in closers if by[m]["silent_total"] > 0]
    if still:
        text += (
            f" What still corrupts under {', '.join(f'`{m}`' for m in still)} is the agent's own "
            "failure, not the note's: a whole component that no retained span references leaves "
            "closure intact while the agent's plan still needs it."
        )
    return text


def tombstone_note(table: pd.DataFrame) -> str:
    """What a store that misses restores does to the tombstone manager."""
    by = table.to_dict("index")
    rows = [(0.0, by["tombstone"])] if "tombstone" in by else []
    rows += sorted(
        (float(m.split("-miss")[1]), r) for m, r in by.items() if m.startswith("tombstone-miss")
    )
    if len(rows) < 2:
        return "The tombstone store was not run with misses at these parameters."
    parts = [
        f"miss {p:g}: {_ci(r, 'silent')} silent, {r['restore_missed_total']} restores missed"
        for p, r in rows
    ]
    rises = all(b[1]["silent"] >= a[1]["silent"] for a, b in zip(rows, rows[1:], strict=False))
    return (
        "**Tombstones can fail when the store does.** With a store that misses a share of "
        "restores (each miss leaves the agent to guess): "
        + "; ".join(parts)
        + ". "
        + (
            "Silent corruptions grow with the miss rate: the zero at miss 0 is the store's "
            "reliability, not the tombstone's."
            if rises and rows[-1][1]["silent"] > rows[0][1]["silent"]
            else "Silent corruptions do not grow with the miss rate here."
        )
    )


def raise_note(table: pd.DataFrame) -> str:
    """The gate in raise mode: its raises, and why its silent count is the throttle gate's."""
    g, r = table.loc["gate"], table.loc["gate-raise"]
    same = g["silent_total"] == r["silent_total"]
    return (
        f"The gate raised {r['raises_dangling_total']} times on dangling references and "
        f"{r['raises_margin_total']} times on the margin alone. Its silent corruptions "
        f"({r['silent_total']}) {'equal' if same else 'differ from'} the throttle gate's "
        f"({g['silent_total']})"
        + (
            ": equal by construction, since after each raise the harness repairs as the throttle "
            "gate does. Raising at eviction time is loud about the window, not about the handle "
            "the agent later guesses."
            if same
            else "."
        )
    )


def margin_note(margin: pd.DataFrame, floor: float = FLOOR) -> str:
    """Whether `margin < floor` warns of a closure violation, with exact ties counted apart."""
    out = []
    for m, r in margin.iterrows():
        useful = r["lift_no_ties_lo"] > 0
        out.append(
            f"`{m}`: of {int(r['flags'])} flags, {r['tie_share']:.0%} are exact ties (the cut "
            f"between two spans of equal score, a repeated chat line for instance). Precision "
            f"{r['precision']:.2f} with ties, {r['precision_no_ties']:.2f} without, against a base "
            f"rate of {r['base_rate']:.2f}: lift without ties {r['lift_no_ties']:+.2f} "
            f"[{r['lift_no_ties_lo']:+.2f}, {r['lift_no_ties_hi']:+.2f}] (with ties "
            f"{r['lift']:+.2f}), recall {r['recall']:.2f}: "
            + (
                "the flag warns better than flagging every cycle."
                if useful
                else "the flag does not warn reliably better than flagging every cycle."
            )
        )
    return f"**The margin below {floor:g} as a warning.** " + " ".join(out)


def differences(table: pd.DataFrame, margin: pd.DataFrame) -> str:
    """Where ours differ from the note, each line from the numbers it states."""
    by, note = table.to_dict("index"), note_figures()
    closers = [m for m in CLOSERS if m in by]
    extra = ", ".join(f"{m} {_ci(by[m], 'extra_tokens_vs_relevance', pct=True)}" for m in closers)
    failed = {m: by[m]["silent_total"] + by[m]["tool_errors_total"] for m in closers}
    lines = []
    if all(by[m]["evicted_binding_turns_total"] == 0 for m in closers):
        lines.append(
            "- **The note's zero, in the note's terms, is ours too**: no closure manager ever "
            "left a reference to an evicted binding in the window (zero by construction). "
            + (
                "The calls that still fail under "
                + ", ".join(f"{m} ({failed[m]})" for m in closers if failed[m])
                + " are another failure: the agent continues a task whose whole component was "
                "evicted, so no span names its handle. "
                f"A pre-dispatch check would have refused {by['gate']['precheck_would_refuse_total']} "
                f"of the gate's {failed.get('gate', 0)}."
                if any(failed.values())
                else "No call failed under them either."
            )
        )
    pct = note["with_closure_pass"].get("extra_retained_tokens_fraction")
    lines.append(
        f"- **Cost.** The note reports about {pct:.0%} extra retained tokens; ours, against "
        f"relevance-only: {extra}. Our gate's throttle defers pruning (we read \"raise the "
        'threshold, defer pruning" as evicting later and less).'
        if isinstance(pct, float)
        else f"- **Cost.** Ours, against relevance-only: {extra}."
    )
    if "relevance" in margin.index:
        r = margin.loc["relevance"]
        lines.append(
            "- **The margin.** The note found a margin below 0.03 reliably preceded a violation "
            f"within two cycles. Ours, for relevance-only, {r['tie_share']:.0%} of such flags "
            f"are exact ties; without them the precision is {r['precision_no_ties']:.2f} against "
            f"a base rate of {r['base_rate']:.2f} (lift {r['lift_no_ties']:+.2f} "
            f"[{r['lift_no_ties_lo']:+.2f}, {r['lift_no_ties_hi']:+.2f}]): "
            + (
                "it does precede violations more often than chance, but far from reliably."
                if r["lift_no_ties_lo"] > 0 and r["precision_no_ties"] < 0.9
                else "it precedes violations reliably."
                if r["lift_no_ties_lo"] > 0
                else "no reliable warning here."
            )
        )
    tomb = by.get("tombstone")
    if tomb is not None:
        grown = tomb["over_budget_turns"] > 0
        lines.append(
            "- **Tombstones grow.** Tombstones are pinned and never evicted, so they grow with the "
            "log; "
            + (
                f"here they pushed the window over budget on {tomb['over_budget_turns']} turns (at "
                f"most {tomb['max_over']} tokens), reported, not hidden."
                if grown
                else "in these runs they never pushed the window over budget (an overrun would be "
                "reported in `over_budget_turns`, not hidden)."
            )
        )
    return "\n".join(lines)


def logs_note(summary: pd.DataFrame, ours: pd.DataFrame) -> str:
    """The trimmers side by side on agent logs, from the orphan summary."""
    s = summary.to_dict("index")
    o, lc = s["closure-safe (ours)"], s["langchain (documented)"]
    last, keep = s["langchain (last, include_system)"], s["keep last N"]
    return (
        f"On {len(ours)} trimmed logs, ours left {o['runs_with_orphans']} with an orphan "
        f"({o['tombstones']} handles tombstoned instead), and a closed window fit every budget in "
        f"{int(ours.closed_fits.sum())} of them. langchain-core's documented setting left "
        f"orphaned handles in {lc['runs_with_orphans']} of {lc['runs']} runs ({lc['orphan_handles']} "
        "handles: a kept call names a job, run, order or file whose defining result was "
        f"trimmed); without `start_on` it left {last['orphan_results']} orphaned tool results. "
        f"Keep-last-N orphaned something in {keep['runs_with_orphans']} of {keep['runs']}. Ours "
        f"keeps {o['mean_token_share']:.0%} of the log's tokens on average against "
        f"{lc['mean_token_share']:.0%} for the documented setting and "
        f"{keep['mean_token_share']:.0%} for keep-last-N"
        + (
            ": the price of whole blocks and a contiguous suffix."
            if o["mean_token_share"] < lc["mean_token_share"]
            else "."
        )
    )

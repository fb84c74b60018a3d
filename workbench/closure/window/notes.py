"""Notebook 07's prose, each sentence computed from the numbers it states and each conclusion
drawn from them (what holds by construction is said so)."""

from __future__ import annotations

import pandas as pd

from workbench.closure.window.cycle import FLOOR
from workbench.closure.window.report import CLOSERS, note_figures


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
        f"({o['tombstones']} handles tombstoned instead); a closed window within the budget, "
        f"with a conversation in it, was found in {int(ours.closed_fits.sum())} of them. "
        "langchain-core's documented setting left "
        f"orphaned handles in {lc['runs_with_orphans']} of {lc['runs']} runs ({lc['orphan_handles']} "
        "handles: a kept call names a job, run, order or file whose defining result was "
        f"trimmed); without `start_on` it left {last['orphan_results']} orphaned tool results. "
        f"Keep-last-N orphaned something in {keep['runs_with_orphans']} of {keep['runs']}. Cut to "
        f"the system prompt alone (no conversation left): ours {o['cut_to_system']} of "
        f"{o['runs']} (each said so, exit 1: not even the last user turn fit), the documented "
        f"setting {lc['cut_to_system']} of {lc['runs']}, keep-last-N {keep['cut_to_system']}. Ours "
        f"keeps {o['mean_token_share']:.0%} of the log's tokens on average against "
        f"{lc['mean_token_share']:.0%} for the documented setting and "
        f"{keep['mean_token_share']:.0%} for keep-last-N"
        + (
            ": the price of whole blocks and a contiguous suffix."
            if o["mean_token_share"] < lc["mean_token_share"]
            else "."
        )
    )


def heldout_note(summary: pd.DataFrame, logs: int) -> str:
    """The side-by-side on the hand-written corpus, from its orphan summary."""
    s = summary.to_dict("index")
    o, keep = s["closure-safe (ours)"], s["keep last N"]
    out = (
        f"On the {logs} complete hand-written logs ({o['runs']} trims), ours left "
        f"{o['runs_with_orphans']} with an orphan ({o['tombstones']} tombstones) and cut "
        f"{o['cut_to_system']} to the system prompt, each time saying so (not even the last user "
        f"turn fit); keep-last-N orphaned something in {keep['runs_with_orphans']} and cut "
        f"{keep['cut_to_system']}."
    )
    if "langchain (documented)" in s:
        lc, last = s["langchain (documented)"], s["langchain (last, include_system)"]
        out += (
            f" On the {lc['runs']} trims langchain-core reads (LangChain dumps, and OpenAI "
            f"messages through its own `convert_to_messages`), its documented setting orphaned "
            f"something in {lc['runs_with_orphans']} and cut {lc['cut_to_system']} to the system "
            f"prompt; plain `last` orphaned something in {last['runs_with_orphans']} "
            f"({last['orphan_results']} results, {last['orphan_handles']} handles). These logs "
            "are short (4 to 8 messages), so a tenth of their tokens rarely holds a whole turn."
        )
    return out


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

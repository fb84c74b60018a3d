"""Notebook 11's chart and sentences, computed from the benchmark's tables (no number is typed)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.agents.bench import OURS

BUILTIN = "built-in"


def kind(policy: str) -> str:
    if policy in OURS:
        return "ours"
    if policy.endswith("+ guard"):
        return "built-in + our guard"
    return "none" if policy == "none" else BUILTIN


def chart(summary: pd.DataFrame) -> alt.Chart:
    """Tasks done per policy (with its bootstrap interval), one row per framework."""
    d = summary.assign(kind=summary["policy"].map(kind))
    base = alt.Chart(d).encode(
        y=alt.Y("policy:N", sort=None, title=None),
        color=alt.Color("kind:N", title=None,
                        scale=alt.Scale(domain=["ours", "built-in", "built-in + our guard", "none"])),
    )  # fmt: skip
    bars = base.mark_bar().encode(x=alt.X("tasks_done:Q", title="tasks done (share)",
                                          scale=alt.Scale(domain=[0, 1])))  # fmt: skip
    rules = base.mark_rule(color="black").encode(x="done_lo:Q", x2="done_hi:Q")
    return (
        (bars + rules)
        .properties(width=360, height=alt.Step(14))
        .facet(row=alt.Row("framework:N", title=None))
        .resolve_scale(y="independent")
    )


def _best_builtin(g: pd.DataFrame) -> pd.Series:
    b = g[g["policy"].map(kind) == BUILTIN]
    return b.sort_values(["tasks_done", "rejected"], ascending=[False, True]).iloc[0]


def verdict(summary: pd.DataFrame) -> pd.DataFrame:
    """Per framework: ours (the default closure trim) beside the best built-in, and whether the
    issue's bar holds (0 rejected requests and 0 orphaned handles over its runs, tasks done at
    least the best built-in's)."""
    rows = []
    for fw, g in summary.groupby("framework", sort=False):
        ours = g[g["policy"] == "closure"].iloc[0]
        best = _best_builtin(g)
        rows.append({
            "framework": fw, "runs": int(ours["runs"]), "ours_rejected": int(ours["rejected"]),
            "ours_orphan_handles": int(ours["orphan_handles"]),
            "ours_tasks_done": ours["tasks_done"], "best_builtin": best["policy"],
            "builtin_tasks_done": best["tasks_done"], "builtin_rejected": int(best["rejected"]),
            "builtin_orphan_handles": int(best["orphan_handles"]),
            "ours_tokens_per_call": ours["tokens_per_call"],
            "builtin_tokens_per_call": best["tokens_per_call"],
            "bar_holds": bool(ours["rejected"] == 0 and ours["orphan_handles"] == 0
                              and ours["tasks_done"] >= best["tasks_done"] and ours["runs"] >= 200),
        })  # fmt: skip
    return pd.DataFrame(rows)


def note(summary: pd.DataFrame) -> str:
    """What the table says, where ours loses included."""
    v = verdict(summary)
    out = []
    for r in v.itertuples():
        out.append(
            f"- **{r.framework}** ({r.runs} runs a policy): ours sent {r.ours_rejected} requests a "
            f"provider would reject and left {r.ours_orphan_handles} handles orphaned, and did "
            f"{r.ours_tasks_done:.2f} of the tasks; the best built-in here, {r.best_builtin}, did "
            f"{r.builtin_tasks_done:.2f} ({r.builtin_rejected} rejected, "
            f"{r.builtin_orphan_handles} orphaned handles). Ours sent "
            f"{r.ours_tokens_per_call:.0f} tokens a call against its {r.builtin_tokens_per_call:.0f}."
        )
    s = summary.set_index(["framework", "policy"])
    losses = []
    for fw in summary["framework"].unique():
        last, ours = s.loc[(fw, "closure last")], s.loc[(fw, "closure")]
        losses.append(
            f"{fw}: keeping the newest turns instead ({'closure last'}) does "
            f"{last['tasks_done']:.2f} with {last['silent']} silent corruptions, against "
            f"{ours['tasks_done']:.2f} and {ours['silent']}"
        )
    if ("langchain", "closure persist") in s.index:
        p = s.loc[("langchain", "closure persist")]
        losses.append(
            f"langchain with `persist=True` (the checkpoint itself trimmed) does "
            f"{p['tasks_done']:.2f}, with {p['orphan_handles']} orphaned handles: a definition cut "
            "from the state is gone for every later turn, and the next reference to it is a guess"
        )
    out.append("")
    out.append(
        "**Where ours loses.** Closure alone does not keep what the next turn will need: "
        + "; ".join(losses)
        + ". Ours also spends the budget: it fills it, where the built-ins that lose runs early "
        'send less. The default trim here is `strategy="relevance"`, which finds the job a '
        "person names because the world's submit result repeats the task's name: a tool that "
        "answers with a bare id would leave only the closure rule, which is `closure last`'s row."
    )
    return "\n".join(out)


def guard_note(summary: pd.DataFrame) -> str:
    """What the guard does behind each built-in."""
    s = summary.set_index(["framework", "policy"])
    out = []
    for (fw, p), r in s.iterrows():
        if not p.endswith("+ guard"):
            continue
        b = s.loc[(fw, p.replace(" + guard", ""))]
        out.append(
            f"- {fw}, {p.replace(' + guard', '')}: requests rejected for pairing "
            f"{b['rejected_pairing']} -> {r['rejected_pairing']}, orphaned handles "
            f"{b['orphan_handles']} -> {r['orphan_handles']}, rejected for the window "
            f"{b['rejected'] - b['rejected_pairing']} -> {r['rejected'] - r['rejected_pairing']}"
        )
    out.append(
        "\nThe guard repairs pairing and lost definitions; it does not shrink a request that "
        "another editor left over the window (that stays the editor's job), and after an editor "
        "that rewrites the history itself (a session `limit`, a history processor) it has no "
        "history left to bring a definition back from: the request is valid, the handle lost."
    )
    return "\n".join(out)

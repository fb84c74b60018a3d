"""Notebook 11's chart and sentences, computed from the benchmark's tables (no number is typed)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from workbench.agents.bench.hooks import TARGET_MS

BUILTIN = "built-in"
GUARDED = "built-in + our guard"
KINDS = ["ours", BUILTIN, GUARDED, "none"]


def chart(summary: pd.DataFrame, title: str) -> alt.Chart:
    """Tasks done per policy (with its bootstrap interval), one row per framework; `title` says
    where the numbers come from."""
    base = alt.Chart(summary).encode(
        y=alt.Y("policy:N", sort=None, title=None),
        color=alt.Color("kind:N", title=None, scale=alt.Scale(domain=KINDS)),
    )
    bars = base.mark_bar().encode(x=alt.X("tasks_done:Q", title="tasks done (share)",
                                          scale=alt.Scale(domain=[0, 1])))  # fmt: skip
    rules = base.mark_rule(color="black").encode(x="done_lo:Q", x2="done_hi:Q")
    return (
        (bars + rules)
        .properties(width=360, height=alt.Step(14))
        .facet(row=alt.Row("framework:N", title=None))
        .resolve_scale(y="independent")
        .properties(title=alt.TitleParams(title, anchor="start"))
    )


def _best_builtin(g: pd.DataFrame) -> pd.Series:
    b = g[g["kind"] == BUILTIN]
    return b.sort_values(["tasks_done", "rejected"], ascending=[False, True]).iloc[0]


def verdict(summary: pd.DataFrame) -> pd.DataFrame:
    """Per framework: ours (`closure`, the relevance trim) beside the best built-in, and whether the
    bar holds (0 rejected requests and 0 orphaned ids over its runs, tasks done at least the best
    built-in's)."""
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
                              and ours["tasks_done"] >= best["tasks_done"]),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def note(summary: pd.DataFrame) -> str:
    """What the table says, where ours loses included."""
    v = verdict(summary)
    out = []
    for r in v.itertuples():
        out.append(
            f"- **{r.framework}** ({r.runs} runs a policy): ours sent {r.ours_rejected} requests a "
            f"provider would reject and left {r.ours_orphan_handles} ids orphaned, and did "
            f"{r.ours_tasks_done:.2f} of the tasks; the best built-in here, {r.best_builtin}, did "
            f"{r.builtin_tasks_done:.2f} ({r.builtin_rejected} rejected, "
            f"{r.builtin_orphan_handles} orphaned ids). Ours sent "
            f"{r.ours_tokens_per_call:.0f} tokens a call against its {r.builtin_tokens_per_call:.0f}."
        )
    s = summary.set_index(["framework", "policy"])
    same: dict[tuple, list[str]] = {}
    for fw in summary["framework"].unique():
        last, ours = s.loc[(fw, "closure last")], s.loc[(fw, "closure")]
        key = (last["tasks_done"], int(last["silent"]), ours["tasks_done"], int(ours["silent"]))
        same.setdefault(key, []).append(fw)
    losses = [
        f"{_listed(fws)}: keeping the newest turns instead (`closure last`) does {lt:.2f} of "
        f"the tasks with {ls} silent corruptions, against {ot:.2f} and {os_} for ours"
        for (lt, ls, ot, os_), fws in same.items()
    ]
    if ("langchain", "closure persist") in s.index:
        p = s.loc[("langchain", "closure persist")]
        losses.append(
            f"langchain with `persist=True` (the checkpoint itself trimmed) does "
            f"{p['tasks_done']:.2f}, with {int(p['orphan_handles'])} orphaned ids: a definition "
            "cut from the state is out of the model's sight for every later turn (the middleware "
            "brings it back only once a call names it), so the next reference to it is a guess"
        )
    out.append("")
    out.append(
        "**Where ours loses.** Closure alone does not keep what the next turn will need: "
        + "; ".join(losses)
        + ". Ours also spends the budget: it fills it, where the built-ins that lose runs early "
        'send less. Ours here is `strategy="relevance"`, which finds the job a person names '
        "because the world's submit result repeats the task's name; a tool that answers with a "
        "bare id gives it less to go on, and this world does not measure that case (`closure "
        "last`, the closure rule with no relevance, is the floor)."
    )
    return "\n".join(out)


def guard_note(summary: pd.DataFrame) -> str:
    """What the guard does behind each built-in."""
    out = []
    guarded = summary[summary["kind"] == GUARDED]
    for r in guarded.to_dict("records"):
        g = summary[(summary["framework"] == r["framework"]) & (summary["editor"] == r["editor"])]
        b = g[g["kind"] == BUILTIN].iloc[0]
        out.append(
            f"- {r['framework']}, {r['editor']}: requests rejected for pairing "
            f"{int(b['rejected_pairing'])} -> {int(r['rejected_pairing'])}, orphaned ids "
            f"{int(b['orphan_handles'])} -> {int(r['orphan_handles'])}, rejected for the window "
            f"{int(b['rejected'] - b['rejected_pairing'])} -> "
            f"{int(r['rejected'] - r['rejected_pairing'])}"
        )
    over = int((guarded["rejected"] - guarded["rejected_pairing"]).sum())
    note = (
        "\nThe guard repairs pairing and lost definitions, and, given `max_tokens` (here the "
        "budget), cuts a request another editor left over it with the closure trim, newest "
        "first; "
        + (
            "no guarded request was rejected for the window."
            if over == 0
            else f"{over:,} guarded requests were still rejected for the window."
        )
        + " Behind the Agents SDK's session `limit` it is given the session (`session=`) and "
        "repairs from the session's whole store, since the limit cuts the history before any "
        "filter runs; behind pydantic-ai's history processor it repairs from every message of "
        "the conversation it has seen, since the processor rewrites the run's own history."
    )
    left = [
        f"{r.editor} ({r.framework}: {int(r.orphan_handles):,})"
        for r in guarded.itertuples()
        if r.orphan_handles > 0
    ]
    if left:
        note += (
            " Orphaned ids it leaves behind " + ", ".join(left) + ": the definitions were "
            "gone before the guard saw them, so nothing is left to bring one back from; the "
            "request is valid, the handle lost."
        )
    out.append(note)
    return "\n".join(out)


def hook_table(hooks: pd.DataFrame) -> pd.DataFrame:
    """The recorded hook times beside their targets (a call, first or next)."""
    target = hooks["messages"].map(TARGET_MS)
    worst = hooks[["first_ms", "ms"]].max(axis=1)
    return hooks.assign(target_ms=target, met=worst <= target)


def hook_note(hooks: pd.DataFrame) -> str:
    """Which hooks meet their time target on every call, first or next, and by how much."""
    t = hook_table(hooks)
    missed = t[~t["met"]]
    worst = t.assign(worst=t[["first_ms", "ms"]].max(axis=1))
    head = worst.sort_values("worst").groupby("messages").tail(1).sort_values("messages")
    slowest = "; ".join(
        f"at {r.messages:,} messages the slowest call is {r.hook}'s, {r.worst:.1f} ms against "
        f"{r.target_ms:.0f}"
        for r in head.itertuples()
    )
    if missed.empty:
        return f"Every hook meets its target on its first call and its next ones: {slowest}."
    lines = [
        f"- {r.hook} at {r.messages:,} messages: first call {r.first_ms:.1f} ms, next "
        f"{r.ms:.1f} ms, target {r.target_ms:.0f} ms"
        for r in missed.itertuples()
    ]
    return (
        f"{int(t['met'].sum())} of {len(t)} hook timings meet their target on every call; these "
        "do not:\n" + "\n".join(lines)
    )


REPLAY_BUILTINS = ("trim_messages (documented)", "trim_messages (last)", "keep last n")


def replay_note(summary: pd.DataFrame) -> str:
    """What the replayed real runs show, computed from the replay's summary."""
    ours = summary[summary["method"] == "closure (ours)"]
    guarded = summary[summary["method"].str.endswith("+ guard")]
    built = summary[summary["method"].isin(REPLAY_BUILTINS)]
    lc = summary[summary["method"] == "trim_messages (documented)"]
    out = [
        f"- **Ours** (the default trim, the newest turns that fit): {int(ours['cuts'].sum())} "
        f"cuts, {int(ours['rejected'].sum())} a provider would reject, "
        f"{int(ours['over_window'].sum())} over the window, {int(ours['orphaned_uses'].sum())} "
        f"id uses orphaned. {int(ours['no_conversation'].sum())} cuts left no turn a person "
        "wrote within the budget (the system prompt alone, or the person's last turn with what "
        "it needs, is over it): ours then raises `ClosureError`, naming the budget, instead of "
        "sending a request with no conversation.",
        f"- **The built-ins**: {int(built['rejected'].sum())} of {int(built['cuts'].sum())} cuts "
        f"a provider would reject and {int(built['orphaned_uses'].sum()):,} id uses orphaned "
        f"(langchain-core's `trim_messages` as documented: {int(lc['orphaned_uses'].sum()):,} in "
        f"{int(lc['cuts_with_orphans'].sum())} cuts).",
        f"- **A built-in with our guard behind it**: {int(guarded['rejected'].sum())} of "
        f"{int(guarded['cuts'].sum())} cuts rejected, {int(guarded['over_window'].sum())} over "
        f"the window, {int(guarded['orphaned_uses'].sum())} id uses orphaned.",
    ]
    return "\n".join(out)


def replay_record(summary: pd.DataFrame) -> dict:
    """The replay's totals per method, over every format (what the tests read back)."""
    g = summary.groupby("method", sort=False)[["cuts", "rejected", "orphaned_uses",
                                                "no_conversation"]].sum()  # fmt: skip
    return {m: {k: int(v) for k, v in r.items()} for m, r in g.iterrows()}


def replay_by_share(cuts: pd.DataFrame) -> pd.DataFrame:
    """Per share of the tokens and method, over every log: cuts, cuts with no conversation, cuts a
    provider would reject, orphaned id uses, the mean share of the tokens kept."""
    g = cuts.assign(share=cuts["tokens_kept"] / cuts["tokens_in"]).groupby(
        ["fraction", "method"], sort=False)  # fmt: skip
    return pd.DataFrame({
        "cuts": g.size(),
        "no_conversation": g["conversation"].apply(lambda s: int((~s.astype(bool)).sum())),
        "rejected": g["rejected"].sum(),
        "orphaned_uses": g["orphaned_uses"].sum(),
        "tokens_kept": g["share"].mean(),
    }).reset_index()  # fmt: skip


def readme_rows(summary: pd.DataFrame) -> list[str]:
    """The README's table (a test holds it to the committed summary): per framework, ours by
    relevance and by recency, the best built-in, and that built-in behind our guard."""
    rows = []
    for fw, g in summary.groupby("framework", sort=False):
        best = _best_builtin(g)["policy"]
        s = g.set_index("policy")
        for p in ("closure", "closure last", best, f"{best} + guard"):
            if p not in s.index:
                continue
            r = s.loc[p]
            rows.append(
                f"| {fw} | {p}{' (ours)' if r['kind'] == 'ours' else ''} | {int(r['runs'])} | "
                f"{int(r['rejected'])} | {int(r['orphan_handles'])} | {int(r['silent'])} | "
                f"{r['tasks_done']:.2f} [{r['done_lo']:.2f}, {r['done_hi']:.2f}] | "
                f"{r['tokens_per_call']:.0f} |"
            )
    return rows

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


def chart(summary: pd.DataFrame, title: str) -> alt.Chart:
    """Tasks done per policy (with its bootstrap interval), one row per framework; `title` says
    where the numbers come from."""
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
        .properties(title=alt.TitleParams(title, anchor="start"))
    )


def _best_builtin(g: pd.DataFrame) -> pd.Series:
    b = g[g["policy"].map(kind) == BUILTIN]
    return b.sort_values(["tasks_done", "rejected"], ascending=[False, True]).iloc[0]


def verdict(summary: pd.DataFrame) -> pd.DataFrame:
    """Per framework: ours (`closure`, the relevance trim) beside the best built-in, and whether the
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
            f"{fw}: keeping the newest turns instead (`closure last`) does "
            f"{last['tasks_done']:.2f} with {int(last['silent'])} silent corruptions, against "
            f"{ours['tasks_done']:.2f} and {int(ours['silent'])}"
        )
    if ("langchain", "closure persist") in s.index:
        p = s.loc[("langchain", "closure persist")]
        losses.append(
            f"langchain with `persist=True` (the checkpoint itself trimmed) does "
            f"{p['tasks_done']:.2f}, with {int(p['orphan_handles'])} orphaned handles: a definition "
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
    s = summary.set_index(["framework", "policy"])
    out = []
    for (fw, p), r in s.iterrows():
        if not p.endswith("+ guard"):
            continue
        b = s.loc[(fw, p.replace(" + guard", ""))]
        out.append(
            f"- {fw}, {p.replace(' + guard', '')}: requests rejected for pairing "
            f"{int(b['rejected_pairing'])} -> {int(r['rejected_pairing'])}, orphaned handles "
            f"{int(b['orphan_handles'])} -> {int(r['orphan_handles'])}, rejected for the window "
            f"{int(b['rejected'] - b['rejected_pairing'])} -> "
            f"{int(r['rejected'] - r['rejected_pairing'])}"
        )
    guarded = s[[p.endswith("+ guard") for _, p in s.index]]
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
        f"{p.replace(' + guard', '')} ({fw}: {int(r['orphan_handles']):,})"
        for (fw, p), r in s.iterrows()
        if p.endswith("+ guard") and r["orphan_handles"] > 0
    ]
    if left:
        note += (
            " Orphaned handles it leaves behind " + ", ".join(left) + ": the definitions were "
            "gone before the guard saw them, so nothing is left to bring one back from; the "
            "request is valid, the handle lost."
        )
    out.append(note)
    return "\n".join(out)


# the targets for one hook call: <= 5 ms at 10^3 messages, <= 50 ms at 10^4
TARGET_MS = {1_000: 5.0, 10_000: 50.0}
# how far one recording of a hook's time moved from another on the 2-core development machine
# (reruns of `make bench ARGS=--agents`): a target met by less than this may be missed on a rerun
SPREAD = 1 / 3


def hook_table(hooks: pd.DataFrame) -> pd.DataFrame:
    """The recorded hook times beside their targets."""
    target = hooks["messages"].map(TARGET_MS)
    return hooks.assign(target_ms=target, met=hooks["ms"] <= target)


def _listed(intro: str, rows: pd.DataFrame, col: str) -> str:
    """A paragraph naming each hook of `rows` with its time in `col`, or nothing for none."""
    if rows.empty:
        return ""
    named = "; ".join(
        f"{r['hook']} at {r['messages']:,} messages ({r[col]:.1f} ms)" for _, r in rows.iterrows()
    )
    return f"\n\n{intro}{named}."


def hook_note(hooks: pd.DataFrame) -> str:
    """Which hooks meet their time target, and which do not, by how much."""
    t = hook_table(hooks)
    missed = t[~t["met"]]
    near = t[t["met"] & (t["ms"] > t["target_ms"] * (1 - SPREAD))]
    close = _listed(
        "Met by less than this machine's run-to-run spread (up to a third), so a rerun may miss: ",
        near,
        "ms",
    )
    first = _listed(
        "The times are a running agent's next calls, each on the history its last call saw grown "
        "by one round; a first call on a history costs more where something is kept between "
        "calls (on a LangChain thread or a pydantic-ai conversation, the reading of its "
        "history, so a call reads only the new round; the relevance ranking's lexical rows; a "
        "guard's store of the conversation; given an Agents SDK session, the guard's reading of "
        "the session's store, which a first call reads whole). First calls over their target: ",
        t[t["first_ms"] > t["target_ms"]] if "first_ms" in t else t.iloc[:0],
        "first_ms",
    )
    if missed.empty:
        return (
            f"Every hook meets its target at {', '.join(f'{n:,}' for n in TARGET_MS)} messages."
            + close
            + first
        )
    lines = [
        f"- {r.hook} at {r.messages:,} messages: {r.ms:.1f} ms a call, target {r.target_ms:.0f} ms"
        for r in missed.itertuples()
    ]
    return (
        f"{int(t['met'].sum())} of {len(t)} hook timings meet their target; these do not:\n"
        + "\n".join(lines)
        + "\n\nOutside a LangChain thread or a pydantic-ai conversation, each call reads the "
        "whole history again (the Agents SDK filter and pydantic-ai's guard keep no reading "
        "between calls yet); the guard reads the history and checks the edited request "
        "(and the history too when the request has an orphaned handle), so it costs more than "
        "a trim."
        + (
            " Given an Agents SDK session, the guard also reads the session's store back: "
            "whole on its first call, then, for a SQLiteSession, only its newest items (any "
            "other session's store whole on every call)."
            if t["hook"].str.contains("session").any()
            else ""
        )
        + close
        + first
    )


def floor_note(floor: pd.DataFrame, hooks: pd.DataFrame, hook: str) -> str:
    """What the first call of `hook` (the SDK session guard) cannot cost less than, beside its
    target and its recorded first call: `floor`, rows of `bench.session_floor` recorded with
    `hooks`."""
    first = hooks[hooks["hook"] == hook].set_index("messages")["first_ms"]
    target = floor["messages"].map(TARGET_MS)
    is_over = floor["floor_ms"] > target
    parts = [
        f"at {r.messages:,} messages {r.floor_ms:.1f} ms ({r.store_read_ms:.1f} + "
        f"{r.read_check_ms:.1f}), {'over' if o else 'within'} the {t:g} ms target, against a "
        f"recorded first call of {first[r.messages]:.1f} ms"
        for r, t, o in zip(floor.itertuples(), target, is_over, strict=True)
    ]
    over = floor[is_over]
    near = floor[is_over & (floor["floor_ms"] <= target * (1 + SPREAD))]
    sizes = " and ".join(f"{n:,}" for n in over["messages"])
    return (
        "The least the session guard's first call can cost, measured on its store and request "
        "with nothing repaired: the store read whole (through the SDK's `get_items`, its only "
        "public read that reaches what a `limit` cut), plus one reading and check of the request "
        "alone: "
        + "; ".join(parts)
        + "."
        + (
            f" In this recording, at {sizes} messages no first call that reads the store through "
            "the SDK and checks the request meets its target, before it repairs anything."
            if len(over)
            else " The floor is within the targets: the rest of the first call is the guard's own."
        )
        + (
            " Over by less than this machine's run-to-run spread (up to a third) at "
            + " and ".join(f"{n:,}" for n in near["messages"])
            + " messages, so there a rerun may find the floor itself within the target."
            if len(near)
            else ""
        )
    )


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
                f"| {fw} | {p}{' (ours)' if p in OURS else ''} | {int(r['runs'])} | "
                f"{int(r['rejected'])} | {int(r['orphan_handles'])} | {int(r['silent'])} | "
                f"{r['tasks_done']:.2f} [{r['done_lo']:.2f}, {r['done_hi']:.2f}] | "
                f"{r['tokens_per_call']:.0f} |"
            )
    return rows

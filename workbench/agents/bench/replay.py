"""Real runs replayed: the histories real agents sent to real providers, which the providers
answered (`../shared/reallogs`, with their provenance), cut at a share of their tokens by each
framework's own context editing, by ours, and by the built-in with our guard behind it; each cut
judged by the judge written apart from the trimmer (`workbench.agents.bench.judge`): a request a
provider would reject, id uses it orphaned, tokens kept.

The editors, as values (`CUTS`):
- `trim_messages`: langchain-core's own, on the history as LangChain reads it
  (`convert_to_messages` of the OpenAI chat logs), in its documented chat-model setting and as
  plain `strategy="last"`, judged on what LangChain sends an OpenAI model
  (`convert_to_openai_messages`) against the history gone through the same conversion;
- `keep last n`: the last n items that fit (the Agents SDK's session `limit`, its keep-last input
  filter, pydantic-ai's documented history processor), the system prompt kept, on the items of
  every format;
- ours: the closure-safe trim (`strategy="last"`, the adapters' default);
- a built-in `+ guard`: our guard, given the budget, behind it.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from workbench.agents import core, for_langchain
from workbench.agents.bench import judge
from workbench.closure.logs import read
from workbench.closure.logs.compare import LC_SETTINGS
from workbench.closure.logs.formats import get

FRACTIONS = (0.25, 0.5, 0.75)
WINDOW = 1.1  # the provider's context window, as a multiple of the budget (as in `runs`)


@dataclass(frozen=True)
class Cut:
    """One way to cut a history to a budget: `edit(history, fmt, budget)` gives the request (in
    the history's format; LangChain messages for `langchain`), `guard` puts ours behind it."""

    name: str
    edit: Callable
    formats: tuple = ("openai", "anthropic", "responses")
    langchain: bool = False  # works on LangChain messages
    guard: bool = False
    ours: bool = False


def ours(obj, fmt: str, budget: int):
    """Our trim's request; None where it refuses (no closed request within the budget keeps a
    message besides the system prompt)."""
    try:
        return core.trim(obj, fmt, budget).output
    except core.NoRoom:
        return None


def keep_last(obj, fmt: str, budget: int):
    """The system messages, then the most recent items that fit `budget` (by the trim's
    counter)."""
    body, items = get(fmt).split(obj)
    log = read(obj, fmt)
    cost = [core.approx_tokens(m) for m in log.messages]
    used = core.tokens(log) - sum(cost)  # the top-level system
    roles = log.messages.role
    head = list(range(next((k for k, r in enumerate(roles) if r != "system"), len(roles))))
    used += sum(cost[k] for k in head)
    tail = []
    for k in range(len(items) - 1, len(head) - 1, -1):
        if used + cost[k] > budget:
            break
        used += cost[k]
        tail.append(k)
    return get(fmt).join(body, [items[k] for k in head + tail[::-1]])


def _lc(obj):
    """The history as LangChain reads it (`convert_to_messages`; a message with calls and no
    `content` key, which OpenAI takes, is given `content: null`, which langchain-core requires),
    or None where langchain-core does not read it."""
    from langchain_core.messages import convert_to_messages

    items = [m if "content" in m else {**m, "content": None} for m in get("openai").split(obj)[1]]
    try:
        return convert_to_messages(items)
    except (ValueError, TypeError, KeyError, NotImplementedError):
        return None


def trim_messages(setting: str) -> Callable:
    def edit(messages, fmt: str, budget: int):
        from langchain_core.messages import trim_messages as lc_trim
        from langchain_core.messages.utils import count_tokens_approximately

        kw = {k: v for k, v in LC_SETTINGS[setting].items()}
        return lc_trim(messages, max_tokens=budget, token_counter=count_tokens_approximately, **kw)

    return edit


CUTS = (
    Cut("trim_messages (documented)", trim_messages("langchain (documented)"), ("openai",), True),
    Cut("trim_messages (last)", trim_messages("langchain (last, include_system)"), ("openai",),
        True),
    Cut("trim_messages (documented) + guard", trim_messages("langchain (documented)"),
        ("openai",), True, guard=True),
    Cut("trim_messages (last) + guard", trim_messages("langchain (last, include_system)"),
        ("openai",), True, guard=True),
    Cut("keep last n", keep_last),
    Cut("keep last n + guard", keep_last, guard=True),
    Cut("closure (ours)", ours, ours=True),
)  # fmt: skip


def _guarded(cut: Cut, history, fmt: str, budget: int):
    """The cut, with our guard (given the budget) behind it; None where the guard refuses (no
    closed request within the budget keeps the person's turn)."""
    try:
        return _guard(cut, history, fmt, budget)
    except core.NoRoom:
        return None


def _guard(cut: Cut, history, fmt: str, budget: int):
    if cut.langchain:
        msgs = list(history)
        g = core.guard(list(cut.edit(msgs, fmt, budget)), msgs, for_langchain.CODEC,
                       max_tokens=budget)  # fmt: skip
        note = core.note(g.tombstones)
        return get("langchain").noted(None, g.items, note) if g.tombstones else g.items
    wire = get(fmt)
    body, items = wire.split(history)
    edited = wire.split(cut.edit(history, fmt, budget))[1]
    codec = dataclasses.replace(core.wire(fmt), wrap=lambda xs: wire.join(body, xs))
    g = core.guard(list(edited), list(items), codec, max_tokens=budget)
    if g.tombstones:  # the note goes where an adapter writes it: the system preamble
        return wire.noted(body, list(g.items), core.note(g.tombstones))
    return wire.join(body, list(g.items))


def _talk(request, fmt: str) -> bool:
    """Does a request hold a message besides the system prompt?"""
    items = get(fmt).split(request)[1]
    items = [{"role": "user"}] if isinstance(items, str) else items
    return any(it.get("role") not in ("system", "developer") for it in items)


def judge_cut(history, request, fmt: str, budget: int) -> dict:
    """The judge's verdict on one cut: whether it holds a conversation (None: the editor sent
    nothing, as our guard refuses to when no closed request within the budget keeps one), provider
    problems (pairing and order, the window apart), orphaned id uses, tokens kept (the judge's own
    count)."""
    if request is None or not _talk(request, fmt):
        return {"messages_out": 0, "tokens_kept": 0, "conversation": False, "rejected": False,
                "over_window": False, "orphaned_uses": 0, "orphaned_ids": "", "problems": ""}  # fmt: skip
    problems = judge.PROBLEMS[fmt](request, None)
    over = judge.PROBLEMS[fmt](request, int(budget * WINDOW))[len(problems) :]
    lost = judge.orphaned_uses(history, request, fmt)
    return {
        "messages_out": len(get(fmt).split(request)[1]),
        "tokens_kept": judge.TOKENS[fmt](request),
        "conversation": True,
        "rejected": bool(problems),
        "over_window": bool(over),
        "orphaned_uses": len(lost),
        "orphaned_ids": " ".join(sorted({x for x, _ in lost})),
        "problems": "; ".join(problems)[:300],
    }


def replay(obj, fmt: str, fractions=FRACTIONS, cuts=CUTS) -> list[dict]:
    """Every cut of one real history at each share of its tokens, judged."""
    from langchain_core.messages import convert_to_openai_messages

    total = core.tokens(read(obj, fmt))
    rows = []
    lc_hist = None
    for frac in fractions:
        budget = max(int(total * frac), 1)
        for cut in cuts:
            if fmt not in cut.formats:
                continue
            t0 = time.perf_counter()
            if cut.langchain:
                if lc_hist is None:
                    lc_hist = _lc(obj) or ()
                    wire_hist = convert_to_openai_messages(list(lc_hist))
                if not lc_hist:
                    continue
                out = (_guarded(cut, lc_hist, fmt, budget) if cut.guard
                       else cut.edit(lc_hist, fmt, budget))  # fmt: skip
                history = wire_hist
                request = None if out is None else convert_to_openai_messages(list(out))
            else:
                request = (_guarded(cut, obj, fmt, budget) if cut.guard
                           else cut.edit(obj, fmt, budget))  # fmt: skip
                history = obj
            seconds = time.perf_counter() - t0
            rows.append({"fraction": frac, "budget": budget, "method": cut.name,
                         "ours": cut.ours, "guard": cut.guard,
                         "messages_in": len(get(fmt).split(obj)[1]), "tokens_in": judge.TOKENS[fmt](obj),
                         **judge_cut(history, request, fmt, budget),
                         "ms": 1000 * seconds})  # fmt: skip
    return rows


def manifest(root) -> list[dict]:
    """The rows of a real-log folder's manifest.csv (the accepted ones: status 200)."""
    with (Path(root) / "manifest.csv").open(encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["status"] == "200"]


def study(root, fractions=FRACTIONS) -> pd.DataFrame:
    """Every accepted log under `root` replayed (`replay`), with its provenance."""
    rows = []
    for r in manifest(root):
        obj = json.loads((Path(root) / r["file"]).read_text(encoding="utf-8"))
        for row in replay(obj, r["format"], fractions):
            rows.append({"log": r["file"], "format": r["format"], "provider": r["provider"],
                         "model": r["model"], **row, "source": f"{r['repo']}@{r['commit'][:7]}:"
                         f"{r['path']} {r['where']}"})  # fmt: skip
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per format and method: cuts, cuts a provider would reject, orphaned id uses (and the cuts
    with any), the share of tokens kept."""
    g = df.groupby(["format", "method"], sort=False)
    return pd.DataFrame({
        "cuts": g.size(),
        "no_conversation": g["conversation"].apply(lambda s: int((~s).sum())),
        "rejected": g["rejected"].sum(),
        "over_window": g["over_window"].sum(),
        "orphaned_uses": g["orphaned_uses"].sum(),
        "cuts_with_orphans": g["orphaned_uses"].apply(lambda s: int((s > 0).sum())),
        "tokens_kept": g.apply(lambda x: (x["tokens_kept"] / x["tokens_in"]).mean(),
                               include_groups=False),
    }).reset_index()  # fmt: skip

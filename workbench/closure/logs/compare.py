"""The side-by-side: agent logs trimmed to several budgets by langchain-core's `trim_messages`
(its documented settings), by a naive keep-last-N, and by the closure-safe trimmer, each result
checked for orphaned calls, results and handles. langchain-core is an optional extra: without it
the LangChain rows are skipped, and `langchain_available()` says so."""

from __future__ import annotations

import json

import pandas as pd

from workbench.closure.logs import FORMATS, Log, approx_tokens, check, loggen, read
from workbench.closure.logs.formats import get
from workbench.closure.logs.formats.langchain import as_dump
from workbench.closure.logs.trim import trim_log
from workbench.closure.window.agent import episode_log
from workbench.closure.window.spans import CLOSURE_PATTERNS

FRACTIONS = (0.1, 0.25, 0.5, 0.75)
# trim_messages as langchain-core documents it for chat models, and plain "last"
LC_SETTINGS = {
    "langchain (documented)": dict(
        strategy="last",
        start_on="human",
        end_on=("human", "tool"),
        include_system=True,
        allow_partial=False,
    ),
    "langchain (last, include_system)": dict(strategy="last", include_system=True),
}


def langchain_available() -> bool:
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        return False
    return True


def test_logs(seeds=range(3), turns: int = 60) -> list[tuple[str, str, list, object]]:
    """(name, source, conversation, patterns): the hand-written logs and simulated episodes."""
    out = [
        (name, "hand-written", conv, loggen.REALISTIC_PATTERNS)
        for name, conv in loggen.HANDWRITTEN.items()
    ]
    for s in seeds:
        conv = loggen.from_episode(episode_log(s, turns))
        out.append((f"episode_{s}", f"simulated (seed {s}, {turns} turns)", conv, CLOSURE_PATTERNS))
    return out


def _row(name, source, log: Log, fraction, budget, method, kept, patterns, **extra):
    rep = check(log, kept, pattern=patterns)
    return {
        "log": name,
        "source": source,
        "format": log.format,
        "budget_fraction": fraction,
        "budget": budget,
        "method": method,
        "kept_messages": len(kept),
        "tokens_kept": sum(approx_tokens(log.messages[i]) for i in kept),
        **rep.counts(),
        "tombstones": 0,
        "closed_fits": None,
        # a message besides the system prompt kept: a trim cut to the system prompt is no request
        "conversation": any(log.messages[i].role != "system" for i in kept),
        **extra,
    }


def keep_last(log: Log, budget: int) -> list[int]:
    """Naive keep-last-N: the system message plus the largest N last messages that fit."""
    msgs = log.messages
    sys = [m.index for m in msgs if m.role == "system"][:1]
    used = sum(approx_tokens(msgs[i]) for i in sys)
    kept = []
    for m in reversed(msgs):
        if m.index in sys:
            continue
        if used + approx_tokens(m) > budget:
            break
        used += approx_tokens(m)
        kept.append(m.index)
    return sorted(sys + kept)


def side_by_side(logs=None, fractions=FRACTIONS) -> pd.DataFrame:
    """Every log x format x budget x method: messages and tokens kept, orphans of each kind
    (langchain-core's `trim_messages` on the formats it reads); for ours also tombstones and
    whether a closed window fit the budget."""
    rows = []
    for name, source, conv, patterns in logs if logs is not None else test_logs():
        for fmt in FORMATS:
            log = read(json.loads(json.dumps(loggen.render(conv, fmt))), fmt)
            total = sum(approx_tokens(m) for m in log.messages)
            lc_msgs = _langchain_messages(log) if langchain_available() else None
            for f in fractions:
                budget = max(int(total * f), 1)
                args = (name, source, log, f, budget)
                rows.append(_row(*args, "keep last N", keep_last(log, budget), patterns))
                if lc_msgs is not None:
                    for label, kw in LC_SETTINGS.items():
                        kept = _langchain_objects(lc_msgs, budget, kw)
                        rows.append(_row(*args, label, kept, patterns))
                t = trim_log(log, budget, pattern=patterns)
                rows.append(
                    _row(*args, "closure-safe (ours)", list(t.kept), patterns)
                    | {
                        "tombstones": len(t.tombstones),
                        "closed_fits": t.fits,  # closed, within the budget, a conversation kept
                        "tokens_kept": t.tokens,
                        **t.report.counts(),  # the output, tombstones included
                    }
                )
    return pd.DataFrame(rows)


HELDOUT = "data/logs/heldout"  # hand-written logs in four wire formats, with expected.csv


def _langchain_messages(log: Log):
    """The log as LangChain message objects, by langchain-core's own conversion (LangChain dumps,
    `dumpd` entries and OpenAI chat messages), or None where it has none or it fails (Anthropic,
    Responses)."""
    try:
        return get(log.format).as_langchain([m.raw for m in log.messages])
    except (TypeError, ValueError, KeyError, NotImplementedError):
        return None


def heldout_side_by_side(logs, fractions=FRACTIONS) -> pd.DataFrame:
    """The side-by-side on logs the generator did not write, each in the format it was written
    in: keep-last-N and ours on every log; langchain-core's `trim_messages` (both settings) on
    the logs it reads (LangChain dumps; OpenAI messages through its `convert_to_messages`)."""
    rows = []
    for name, log in logs:
        total = sum(approx_tokens(m) for m in log.messages)
        lc_msgs = _langchain_messages(log) if langchain_available() else None
        for f in fractions:
            budget = max(int(total * f), 1)
            args = (name, "hand-written (data/logs/heldout)", log, f, budget)
            rows.append(_row(*args, "keep last N", keep_last(log, budget), CLOSURE_PATTERNS))
            if lc_msgs is not None:
                for label, kw in LC_SETTINGS.items():
                    kept = _langchain_objects(lc_msgs, budget, kw)
                    rows.append(_row(*args, label, kept, CLOSURE_PATTERNS))
            t = trim_log(log, budget)
            rows.append(
                _row(*args, "closure-safe (ours)", list(t.kept), CLOSURE_PATTERNS)
                | {
                    "tombstones": len(t.tombstones),
                    "closed_fits": t.fits,
                    "tokens_kept": t.tokens,
                    **t.report.counts(),
                }
            )
    return pd.DataFrame(rows)


def _langchain_objects(msgs, budget: int, settings: dict) -> list[int]:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    out = trim_messages(
        msgs, max_tokens=budget, token_counter=count_tokens_approximately, **settings
    )
    where = {id(m): i for i, m in enumerate(msgs)}
    return sorted(where[id(m)] for m in out if id(m) in where)


def orphan_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per method: runs, runs with any orphan, orphans of each kind, runs cut to the system
    prompt (no conversation left), mean share of tokens kept."""
    d = df.assign(
        any_orphan=(df.orphan_calls + df.orphan_results + df.orphan_handles) > 0,
        token_share=df.tokens_kept / (df.budget / df.budget_fraction),
        system_only=~df.conversation.astype(bool),
    )
    return (
        d.groupby("method", sort=False)
        .agg(
            runs=("log", "size"),
            runs_with_orphans=("any_orphan", "sum"),
            orphan_calls=("orphan_calls", "sum"),
            orphan_results=("orphan_results", "sum"),
            orphan_handles=("orphan_handles", "sum"),
            tombstones=("tombstones", "sum"),
            cut_to_system=("system_only", "sum"),
            mean_token_share=("token_share", "mean"),
        )
        .astype({"runs_with_orphans": int, "cut_to_system": int})
    )


_LC: dict = {}  # langchain-core's functions, imported on the first count (an optional extra)


def _lc_functions():
    if not _LC:
        from langchain_core.messages import SystemMessage, messages_from_dict
        from langchain_core.messages.utils import count_tokens_approximately

        _LC.update(
            system=SystemMessage, from_dict=messages_from_dict, count=count_tokens_approximately
        )
    return _LC


def langchain_counter(message) -> int:
    """langchain-core's `count_tokens_approximately` as a trim counter: a message read from
    LangChain objects is counted as LangChain counts it; a message of another kind (a
    `messages_to_dict` entry, a tombstone preamble) as the LangChain message it stands for."""
    lc = _LC or _lc_functions()
    raw = message.raw
    if type(raw) is not dict and raw is not None:  # a LangChain object: the common case
        return lc["count"]((raw,))
    raw = as_dump(raw)
    if isinstance(raw, dict) and "data" in raw:
        raw = lc["from_dict"]([raw])[0]
    elif raw is None or isinstance(raw, dict):
        raw = lc["system"](message.text) if message.role == "system" else None
    if raw is None:
        raise TypeError("langchain_counter counts LangChain messages (objects or dicts)")
    return lc["count"]([raw])

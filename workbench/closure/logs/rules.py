"""What makes an agent log no valid request, checked in one pass after reading: a call id used
twice, a second result for a call, a result for an id no call has, a result before its call, the
provider's order rules (OpenAI and LangChain: a call's results right after it; Anthropic: a user
turn first, turns alternating, every `tool_result` in the user turn right after its `tool_use`,
before any other block of that turn). Each raises one LogError naming the message and the field.
"""

from __future__ import annotations

from workbench.closure.logs.logtypes import Log, Message, err
from workbench.closure.logs.readers import lc_serialized


def id_field(log: Log, m: Message, k: int, kind: str) -> str:
    """Where in message `m` its k-th call id (or k-th answered call id) stands."""
    raw = m.raw if isinstance(m.raw, dict) else {}
    if log.format == "anthropic":
        want = "tool_use" if kind == "call" else "tool_result"
        blocks = raw.get("content") if isinstance(raw.get("content"), list) else []
        at = [j for j, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == want]
        return f"content[{at[k] if k < len(at) else k}].{'id' if kind == 'call' else 'tool_use_id'}"
    if log.format == "responses":
        return "call_id"
    if log.format == "langchain":
        pre = "kwargs." if lc_serialized(raw) else "data."
        return f"{pre}tool_call_id" if kind == "result" else f"{pre}tool_calls[{k}].id"
    if kind == "call":
        return (
            "function_call" if m.calls[k][0].startswith("function_call@") else f"tool_calls[{k}].id"
        )
    return "name" if raw.get("role") == "function" else "tool_call_id"


def check_rules(log: Log) -> None:
    """Raise LogError at the first message that makes the log no valid request (see the module
    docstring); an unanswered call or an undefined handle is no such error (the closure check
    reports it). One pass."""
    msgs = log.messages
    call_at: dict[str, int] = {}
    answered: dict[str, int] = {}
    adjacent = log.format in ("openai", "langchain")
    after = log.format == "anthropic"
    last_call_turn = -1  # OpenAI: the message the current run of tool messages follows
    carried = set(log.carried)  # answers to calls of a stored response, not of this log
    for m in msgs:
        i = m.index
        for k, (cid, name) in enumerate(m.calls) if m.calls else ():
            if cid in call_at:
                raise err(
                    f"call id {cid!r} ({name}) is used again: message {call_at[cid]} has it",
                    i,
                    id_field(log, m, k, "call"),
                )
            call_at[cid] = i
        for k, cid in enumerate(m.answers) if m.answers else ():
            j = call_at.get(cid)
            if j is None and m.index in carried and cid not in answered:
                answered[cid] = i
                continue
            if (
                j is None
                or cid in answered
                or adjacent
                and j != last_call_turn
                or after
                and j != i - 1
            ):
                _bad_result(log, m, k, cid, j, answered)
            answered[cid] = i
        if m.role != "tool":
            last_call_turn = i
    if log.format == "anthropic":
        _anthropic_turns(msgs)


def _bad_result(log: Log, m: Message, k: int, cid: str, j, answered) -> None:
    where = id_field(log, m, k, "result")
    if cid in answered:
        raise err(
            f"a second result for call id {cid!r}: message {answered[cid]} answers it",
            m.index,
            where,
        )
    if j is None:
        later = next(
            (x.index for x in log.messages[m.index :] for c, _ in x.calls if c == cid), None
        )
        if later is None:
            raise err(
                f"a result for call id {cid!r}, which no message in the log calls", m.index, where
            )
        raise err(
            f"the result for call id {cid!r} comes before its call (message {later})",
            m.index,
            where,
        )
    if log.format == "anthropic":
        raise err(
            f"the tool_result for {cid!r} must be in the user turn right after its tool_use "
            f"(message {j})",
            m.index,
            where,
        )
    raise err(
        f"the result for call id {cid!r} must follow its call (message {j}) with only tool "
        "results between",
        m.index,
        where,
    )


def _anthropic_turns(msgs) -> None:
    prev = None
    for m in msgs:
        role = m.raw["role"]
        if prev is None and role != "user":
            raise err("an Anthropic conversation starts with a user turn", m.index, "role")
        if role == prev:
            raise err(
                f"two {role} turns in a row (messages {m.index - 1} and {m.index}): Anthropic's "
                "turns alternate",
                m.index,
                "role",
            )
        prev = role
        blocks = m.raw["content"] if isinstance(m.raw["content"], list) else []
        other = None
        for k, b in enumerate(blocks):
            is_result = isinstance(b, dict) and b.get("type") == "tool_result"
            if not is_result and other is None:
                other = k
            elif is_result and other is not None:
                raise err(
                    f"a tool_result after another block (content[{other}]): a turn's tool_result "
                    "blocks come first",
                    m.index,
                    f"content[{k}].type",
                )

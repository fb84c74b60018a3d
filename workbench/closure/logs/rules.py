"""What makes an agent log no valid request, checked in one pass after reading: a call id used
twice, a second result for a call, a result before its call, the provider's order rules (OpenAI
and LangChain: a call's results right after it; Anthropic: a user turn first, turns alternating,
every `tool_result` in the user turn right after its `tool_use`, before any other block of that
turn, a server tool's result in its own assistant turn; Responses: a `reasoning` item followed by
the item it reasoned for). Each raises one LogError naming the message and the field. A result
whose call the log does not hold is no such error: it is an orphan (the closure check's).
"""

from __future__ import annotations

from workbench.closure.logs.logtypes import Log, Message, err
from workbench.closure.logs.readers import LEGACY, lc_serialized


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
        return "function_call" if m.calls[k][0].startswith(LEGACY) else f"tool_calls[{k}].id"
    return "name" if raw.get("role") == "function" else "tool_call_id"


def check_rules(log: Log, in_order_part: bool = False) -> None:
    """Raise LogError at the first message that makes the log no valid request (see the module
    docstring); an unanswered call or an undefined handle is no such error (the closure check
    reports it). One pass. `in_order_part`: `log` is messages of a log that passed, in their
    order (`read_part`), where the rules of calls and results hold already (no id comes twice,
    a kept result still follows its kept call with only results between; one whose call is gone
    is an orphan), so only the turn rules (Anthropic's turns, Responses' reasoning items),
    which a gap can break, are checked."""
    if in_order_part:
        _turn_rules(log)
        return
    msgs = log.messages
    call_at: dict[str, int] = {}
    answered: dict[str, int] = {}
    adjacent = log.format in ("openai", "langchain")
    after = log.format == "anthropic"
    last_call_turn = -1  # OpenAI: the message the current run of tool messages follows
    carried = set(log.carried)  # answers to calls of a stored response, not of this log
    later: dict | None = None  # call id -> its message, built at the first result with no call
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
            if j is None and cid not in answered:
                if later is None:
                    later = {c: x.index for x in msgs for c, _ in x.calls}
                if later.get(cid, -1) < i:
                    # a result whose call the log does not hold: an orphan, as a front cut
                    # leaves it (the closure check reports it), not a malformed log
                    answered[cid] = i
                    continue
            own = after and j == i and m.raw.get("role") == "assistant"  # a server tool's result
            if (
                j is None
                or cid in answered
                or adjacent
                and j != last_call_turn
                or after
                and j != i - 1
                and not own
            ):
                _bad_result(log, m, k, cid, j, answered)
            answered[cid] = i
        if m.role != "tool":
            last_call_turn = i
    _turn_rules(log)


def _turn_rules(log: Log) -> None:
    if log.format == "anthropic":
        _anthropic_turns(log.messages)
    if log.format == "responses":
        _reasoning_followed(log.messages)


def _reasoning_followed(msgs) -> None:
    """A Responses `reasoning` item is sent with the item it reasoned for (a call, or the
    assistant's message) right after it: the API rejects one followed by anything else."""
    for k, m in enumerate(msgs):
        raw = m.raw
        if not (isinstance(raw, dict) and raw.get("type") == "reasoning"):
            continue
        nxt = msgs[k + 1] if k + 1 < len(msgs) else None
        if nxt is not None and nxt.role == "assistant" and not nxt.answers:
            continue
        what = "nothing" if nxt is None else f"message {nxt.index} ({nxt.role})"
        raise err(
            f"a reasoning item must be followed by the item it reasoned for (a call or the "
            f"assistant's message); {what} follows it",
            m.index,
            "type",
        )


def _bad_result(log: Log, m: Message, k: int, cid: str, j, answered) -> None:
    where = id_field(log, m, k, "result")
    if cid in answered:
        raise err(
            f"a second result for call id {cid!r}: message {answered[cid]} answers it",
            m.index,
            where,
        )
    if j is None:
        # (a result whose call the log does not hold is an orphan, not this error)
        later = next(x.index for x in log.messages[m.index :] for c, _ in x.calls if c == cid)
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

"""Pairing a log's calls with their results, and what makes a log no valid request, in one pass
after reading (`settle`). Each error is one LogError naming the message and the field.

Providers as they answer (`../shared/reallogs`: requests they took):
- a call id used again once its call was answered is another call (GPT-4o does it, and OpenAI
  answers; so does Anthropic): it pairs with the results after it and is read as `id#2`, with a
  warning; a call id used again while its call still waits for a result is an error;
- Anthropic merges consecutive turns of one role, so two in a row are one turn; a `system` turn
  among the messages stands apart from the turns;
- a result whose call the log does not hold is no error: it is an orphan (the closure check's).

The order rules: OpenAI and LangChain, a call's results right after it (only results between);
Anthropic, a user turn first (or a compaction), every `tool_result` in the user turn right after
the turn of its `tool_use` and before any other block of that turn, a server tool's result in its
own assistant turn; Responses, a `reasoning` item followed by the item it reasoned for. A second
result for one call, a result before its call: errors.
"""

from __future__ import annotations

from workbench.closure.logs.logtypes import Log, Message, err
from workbench.closure.logs.readers import ORDER, lc_serialized

REUSE = (
    "call id {cid!r} is used again at message {i}, after message {j} answered its earlier call: "
    "read as another call ({new}); OpenAI and Anthropic take a call id again once its call is "
    "answered"
)


def wire_id(cid: str) -> str:
    """The id a call was written with (`settle` reads a call id used again as `id#2`, ...)."""
    head, _, n = cid.rpartition("#")
    return head if head and n.isdigit() and int(n) > 1 else cid


def id_field(log: Log, m: Message, k: int, kind: str) -> str:
    """Where in message `m` its k-th call id (or k-th answered call id) stands."""
    raw = m.raw if isinstance(m.raw, dict) else {}
    if log.format == "anthropic":
        want = ("tool_use", "server_tool_use", "mcp_tool_use") if kind == "call" else None
        blocks = raw.get("content") if isinstance(raw.get("content"), list) else []
        at = [j for j, b in enumerate(blocks) if isinstance(b, dict)
              and (b.get("type") in want if want else str(b.get("type")).endswith("tool_result"))]  # fmt: skip
        return f"content[{at[k] if k < len(at) else k}].{'id' if kind == 'call' else 'tool_use_id'}"
    if log.format == "responses":
        return "call_id"
    if log.format == "langchain":
        pre = "kwargs." if lc_serialized(raw) else "data."
        return f"{pre}tool_call_id" if kind == "result" else f"{pre}tool_calls[{k}].id"
    if kind == "call":
        return "function_call" if m.calls[k][0].startswith(ORDER) else f"tool_calls[{k}].id"
    return "name" if raw.get("role") == "function" else "tool_call_id"


def _turns(log: Log) -> list[int]:
    """Each message's turn: Anthropic merges consecutive messages of one role into one turn (a
    system message stands apart, in the turn before it); elsewhere each message is its own."""
    if log.format != "anthropic":
        return list(range(len(log.messages)))
    out, turn, prev = [], -1, None
    for raw in log.messages.raw:
        role = raw["role"]
        if role != "system" and role != prev:
            turn += 1
            prev = role
        out.append(max(turn, 0))
    return out


def settle(log: Log, cut: bool = False) -> None:
    """Pair every result with its call (renaming a reused call id `id#2`, ...), note what the
    provider accepts that a reader may not expect (`log.warnings`), and raise at the first
    message that makes the log no valid request. `cut`: the log is a cut another editor made,
    for a repair to mend: what a cut can break is no error (the rules of turns; a result whose
    call was cut, its id called again later, is an orphan)."""
    msgs = log.messages
    turn = _turns(log)
    adjacent = log.format in ("openai", "langchain")
    waiting: dict[str, tuple[str, int]] = {}  # wire id -> (its id here, message) of an open call
    times: dict[str, int] = {}  # wire id -> calls made with it so far
    answered: dict[str, int] = {}  # id here -> the message answering it
    last_of: dict[str, str] = {}  # wire id -> the id here of its latest call
    carried = set(log.carried)
    later: set | None = None  # wire ids of every call, built at the first result with no call
    warnings = []
    last_call_turn = -1  # OpenAI: the message the current run of tool messages follows
    for i in range(len(msgs)):
        if msgs.calls[i]:
            mine = []
            for k, (cid, name) in enumerate(msgs.calls[i]):
                if cid in waiting:
                    raise err(
                        f"call id {cid!r} ({name}) is used again: message {waiting[cid][1]} has "
                        "it, and its call has no result yet",
                        i,
                        id_field(log, msgs[i], k, "call"),
                    )
                n = times[cid] = times.get(cid, 0) + 1
                new = cid if n == 1 else f"{cid}#{n}"
                if n > 1:
                    j = answered[last_of[cid]]
                    warnings.append(REUSE.format(cid=cid, i=i, j=j, new=new))
                waiting[cid] = (new, i)
                last_of[cid] = new
                mine.append((new, name))
            if mine != list(msgs.calls[i]):
                msgs.calls[i] = tuple(mine)  # (a call id used again is read as another call)
        if msgs.answers[i]:
            mine = []
            for k, cid in enumerate(msgs.answers[i]):
                if cid in waiting:
                    new, j = waiting.pop(cid)
                    server_turn = turn[i] == turn[j] and msgs.raw[i].get("role") == "assistant"
                    if (adjacent and j != last_call_turn) or (
                        log.format == "anthropic" and turn[i] != turn[j] + 1 and not server_turn
                    ):
                        _bad_result(log, msgs[i], k, cid, j, None)
                    answered[new] = i
                    mine.append(new)
                    continue
                if cid in last_of:  # its call was answered already
                    _bad_result(log, msgs[i], k, cid, None, answered[last_of[cid]])
                if later is None:
                    later = {c for calls in msgs.calls for c, _ in calls}
                if cid in later and i not in carried and not cut:
                    _bad_result(log, msgs[i], k, cid, None, None)
                # a result whose call the log does not hold: an orphan, as a front cut leaves it
                # (the closure check reports it), or one the stored response's call waits for
                mine.append(cid)
            if mine != list(msgs.answers[i]):
                msgs.answers[i] = tuple(mine)  # (the results of a call read as another call)
        if msgs.role[i] != "tool":
            last_call_turn = i
    log.warnings = tuple(warnings)
    if not cut:
        turn_rules(log)


def turn_rules(log: Log) -> None:
    """The rules of turns a kept subset can break (checked again on a trim's output)."""
    if log.format == "anthropic":
        _anthropic_turns(log)
    if log.format == "responses":
        _reasoning_followed(log.messages)


def _reasoning_followed(msgs) -> None:
    """A Responses `reasoning` item is sent with the item it reasoned for (a call, or the
    assistant's message) right after it: the API rejects one followed by anything else."""
    for k, raw in enumerate(msgs.raw):
        if not (isinstance(raw, dict) and raw.get("type") == "reasoning"):
            continue
        m = msgs[k]
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


def _bad_result(log: Log, m: Message, k: int, cid: str, j, second) -> None:
    where = id_field(log, m, k, "result")
    if second is not None:
        raise err(
            f"a second result for call id {cid!r}: message {second} answers it", m.index, where
        )
    if j is None:
        later = next(k for k in range(m.index, len(log.messages))
                     for c, _ in log.messages.calls[k] if wire_id(c) == cid)  # fmt: skip
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


def _anthropic_turns(log: Log) -> None:
    """A user turn first (unless the conversation opens on a compaction), and in each user turn
    (consecutive user messages are one) its tool_result blocks before any other block."""
    raws = log.messages.raw
    first = next((k for k, r in enumerate(raws) if r["role"] != "system"), None)
    if first is not None and raws[first]["role"] != "user" and first not in log.compactions:
        raise err("an Anthropic conversation starts with a user turn", first, "role")
    other = None  # (message, block) of the current user turn's first block that is no result
    prev = None
    for i, raw in enumerate(raws):
        role = raw["role"]
        if role == "system":
            continue
        if role != prev:
            other, prev = None, role
        if role != "user":
            continue
        blocks = raw["content"] if isinstance(raw["content"], list) else [raw["content"]]
        for k, b in enumerate(blocks):
            is_result = isinstance(b, dict) and b.get("type") == "tool_result"
            if not is_result and other is None:
                other = (i, k)
            elif is_result and other is not None:
                where = f"content[{other[1]}]" + (
                    f" of message {other[0]}" if other[0] != i else ""
                )
                raise err(
                    f"a tool_result after another block ({where}): a turn's tool_result blocks "
                    "come first",
                    i,
                    f"content[{k}].type",
                )

"""Pairing a log's calls with their results, and what makes a log no valid request, in one pass
after reading (`settle`). Each error is one LogError naming the message and the field.

Providers as they answer (`../shared/reallogs`: requests they took):
- a call id used again once its call was answered is another call (GPT-4o does it, and OpenAI
  answers; so does Anthropic): it pairs with the results after it and is read as `id#2`, with a
  warning; a call id used again while its call still waits for a result is an error;
- Anthropic merges consecutive turns of one role, so two in a row are one turn; a `system` turn
  among the messages stands apart from the turns;
- a result whose call the log does not hold is no error: it is an orphan (the closure check's).

The order rules are each format's (`workbench.closure.logs.formats`: where a result stands, the
turns, what a kept subset can break). A second result for one call, a result before its call:
errors in every format.
"""

from __future__ import annotations

from workbench.closure.logs.formats import get
from workbench.closure.logs.logtypes import Log, Message, err

REUSE = (
    "call id {cid!r} is used again at message {i}, after message {j} answered its earlier call: "
    "read as another call ({new}); OpenAI and Anthropic take a call id again once its call is "
    "answered"
)


def wire_id(cid: str) -> str:
    """The id a call was written with (`settle` reads a call id used again as `id#2`, ...)."""
    head, _, n = cid.rpartition("#")
    return head if head and n.isdigit() and int(n) > 1 else cid


def settle(log: Log, cut: bool = False) -> None:
    """Pair every result with its call (renaming a reused call id `id#2`, ...), note what the
    provider accepts that a reader may not expect (`log.warnings`), and raise at the first
    message that makes the log no valid request. `cut`: the log is a cut another editor made,
    for a repair to mend: what a cut can break is no error (the rules of turns; a result whose
    call was cut, its id called again later, is an orphan)."""
    msgs = log.messages
    fmt = get(log.format)
    turn = fmt.turns(msgs.raw)
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
                        fmt.id_field(log, msgs[i], k, "call"),
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
                    if not fmt.in_place(i, j, last_call_turn, turn, msgs.raw):
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
    get(log.format).turn_rules(log)


def _bad_result(log: Log, m: Message, k: int, cid: str, j, second) -> None:
    fmt = get(log.format)
    where = fmt.id_field(log, m, k, "result")
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
    raise err(fmt.misplaced(cid, j), m.index, where)

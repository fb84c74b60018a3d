"""What the closure check of an agent log works on: messages, the log, the report, the check.

One message is one span of the log (`m0`, `m1`, ...: the message index), so a trimmed log is a
subset of whole messages. Roles: `system` (system and developer messages, and what stands for a
compacted prefix), `user`, `assistant` (its text and every call's arguments) and `tool` (a
result). The closure is order-aware:

- a result answers a call in an earlier kept message, and a call's results are kept with it (a
  call the provider's server runs needs no result from the client);
- an id a kept call uses that an earlier message defined (`workbench.closure.logs.flow`: the
  message where the value first appeared, a tool result or a person's words) is defined by a kept
  message, or a typed tombstone `{"evicted_ref": id}` stands for it.

The wire formats are read in `workbench.closure.logs.formats`, checked in
`workbench.closure.logs.rules` and written in `workbench.closure.logs.writers`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from workbench.closure.logs.flow import DEFAULT, Flow, find
from workbench.common.io import InputError


class LogError(InputError):
    """A malformed agent log; the message names the file, the message index and the field."""

    def __init__(self, message: str, *, path=None, index: int | None = None, field=None):
        where = [str(path)] if path is not None else []
        where += [f"message {index}"] if index is not None else []
        where += [f"field '{field}'"] if field is not None else []
        ValueError.__init__(self, ": ".join([*where, message]))
        self.message, self.path, self.line, self.field, self.index = (
            message,
            path,
            None,
            field,
            index,
        )


def err(msg, index=None, fld=None, path=None) -> LogError:
    return LogError(msg, path=path, index=index, field=fld)


def text_of(content, index, fld) -> str:
    """The text of a content value: a string, or a list of parts or blocks (text, tool_result
    and tool_use blocks, Responses input_text / output_text parts, reasoning summaries, a
    compaction's summary)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise err(f"must be a string or a list of blocks, got {type(content).__name__}", index, fld)
    out = []
    for k, b in enumerate(content):
        if isinstance(b, str):
            out.append(b)
        elif isinstance(b, dict):
            if isinstance(b.get("text"), str):
                out.append(b["text"])
            elif isinstance(b.get("content"), str | list):  # a tool_result's, a compaction's
                out.append(text_of(b["content"], index, f"{fld}[{k}].content"))
            elif b.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                out.append(json.dumps(b.get("input", {}), ensure_ascii=False))
        else:
            raise err("a content block must be an object or a string", index, f"{fld}[{k}]")
    return "\n".join(out)


MEDIA = frozenset({"image", "image_url", "input_image", "file", "file_url", "input_file",
                   "document", "document_url", "input_audio", "audio", "audio_url", "video",
                   "video_url", "input_video"})  # fmt: skip
MEDIA_TOKENS = 85  # a picture, a file or a sound: a fixed price, as langchain-core prices an image


def media_of(content) -> int:
    """How many media parts (images, files, sound) a content value holds, results' included."""
    if isinstance(content, list):
        return sum(media_of(b) for b in content)
    if isinstance(content, dict):
        if content.get("type") in MEDIA:
            return 1
        inner = content.get("content", content.get("output"))
        return media_of(inner) if isinstance(inner, list) else 0
    return 0


class Message:
    """One message of a log, as the closure check sees it (`raw` is the message as read); a log
    holds its messages column by column (`Messages`).

    `text` is what a person or a model reads of it: the content, each call's arguments, a
    result's content. `calls` are its calls, (call id, tool name); `args` their arguments as
    written (a JSON string, an object or free text), one per call; `answers` the call ids it
    answers. A call id the log uses again after its first call was answered is read as
    `id#2`, `id#3`... (`workbench.closure.logs.rules.settle`), so each call has an id of its
    own here while the log keeps the ids it was written with."""

    __slots__ = ("index", "role", "text", "calls", "args", "answers", "raw", "media", "given")

    def __init__(self, index, role, text, calls=(), answers=(), raw=None, args=(), media=0,
                 given=None):  # fmt: skip
        self.index, self.role, self.text, self.raw = index, role, text, raw
        self.media = media  # media parts (`media_of`), priced apart from the text
        # in a model's own turn, what a server's results returned and what a compaction says of
        # the turns it replaced (Anthropic): it defines ids, as a result does
        self.given = given
        self.calls = calls  # [(call id, tool name)]
        self.args = args  # per call: its arguments
        self.answers = answers  # call ids this message answers

    def __repr__(self) -> str:
        return (
            f"Message({self.index}, {self.role}, calls={len(self.calls)}, answers={self.answers})"
        )


COLUMNS = ("role", "text", "calls", "args", "answers", "raw", "media", "given")


class Messages:
    """A log's messages, held column by column (one list a field: a role, a text, the calls...),
    so a long log read is a few lists rather than an object a message, which the garbage
    collector would walk on every full pass while the log lives. `messages[i]` is message i as
    a `Message` (made on the spot: read it, do not keep it to write to); write a field through
    its column (`messages.calls[i] = ...`)."""

    __slots__ = COLUMNS

    def __init__(self, messages=()):
        for c in COLUMNS:
            setattr(self, c, [])
        for m in messages:
            self.add(m.role, m.text, m.calls, m.answers, m.raw, m.args, m.media, m.given)

    def add(self, role, text, calls=(), answers=(), raw=None, args=(), media=0, given=None):
        """Append a message (`Message`'s fields, its index the next position)."""
        self.role.append(role)
        self.text.append(text)
        self.calls.append(calls)
        self.args.append(args)
        self.answers.append(answers)
        self.raw.append(raw)
        self.media.append(media)
        self.given.append(given)

    def __len__(self) -> int:
        return len(self.role)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return Message(i, self.role[i], self.text[i], self.calls[i], self.answers[i], self.raw[i],
                       self.args[i], self.media[i], self.given[i])  # fmt: skip

    def __iter__(self):
        return map(self.__getitem__, range(len(self)))

    def __reversed__(self):
        return map(self.__getitem__, range(len(self) - 1, -1, -1))

    def __bool__(self) -> bool:
        return bool(self.role)


@dataclass(repr=False)
class Log:
    """An agent log in one of the wire formats (`workbench.closure.logs.formats.FORMATS`)."""

    format: str
    messages: Messages  # (a list of `Message`s is taken too)
    # a top-level system prompt (Anthropic `system`, Responses `instructions`)
    system: object = None
    body: dict | None = None  # a request body (its other keys kept on writing), None for a list
    key: str = "messages"  # the body's message list key (`input` for the Responses API)
    # results answering calls the log does not hold, which the provider keeps (a Responses body
    # continuing `previous_response_id`): the request must carry them, so a trim keeps them
    carried: tuple = ()
    # calls the provider's server runs and the client never answers (a Responses item the server
    # executed, an Anthropic server tool paused in the last turn)
    server: frozenset = frozenset()
    compactions: tuple = ()  # messages holding a compaction, which stands for what it replaced
    warnings: tuple = ()  # what the provider accepts and the log does (a call id used again)
    _flows: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.messages, Messages):  # (a list of `Message`s)
            self.messages = Messages(self.messages)

    def __repr__(self) -> str:
        calls = sum(len(m.calls) for m in self.messages)
        return f"Log({self.format}, {len(self.messages)} messages, {calls} tool calls)"

    def system_text(self) -> str:
        return text_of(self.system, None, "system") if self.system is not None else ""

    def flow(self, pattern=None):
        """The ids this log's calls take from what came before them
        (`workbench.closure.logs.flow.Flow`), found once per pattern."""
        key = DEFAULT if pattern is None else pattern
        if key not in self._flows:
            self._flows[key] = Flow.of(self, find(key))
        return self._flows[key]


@dataclass(frozen=True, repr=False)
class LogReport:
    """What a set of kept messages leaves dangling, and how many id uses it followed."""

    orphan_results: tuple  # (message index, call id): a result whose call is gone
    orphan_calls: tuple  # (message index, call id, tool name): a call whose result is gone
    orphan_handles: dict  # id -> message indices using it, its definition gone
    tombstoned: tuple = ()  # ids a tombstone in the kept messages stands for
    ids: int = 0  # distinct ids the kept calls take from earlier messages
    uses: int = 0  # how many times they take them

    @property
    def closed(self) -> bool:
        return not (self.orphan_results or self.orphan_calls or self.orphan_handles)

    def counts(self) -> dict:
        return {
            "orphan_calls": len(self.orphan_calls),
            "orphan_results": len(self.orphan_results),
            "orphan_handles": len(self.orphan_handles),
        }

    def to_dict(self) -> dict:
        return {
            "closed": self.closed,
            "orphan_calls": [
                {"message": i, "call_id": c, "tool": n} for i, c, n in self.orphan_calls
            ],
            "orphan_results": [{"message": i, "call_id": c} for i, c in self.orphan_results],
            "orphan_handles": [
                {"handle": h, "named_by_messages": list(v)} for h, v in self.orphan_handles.items()
            ],
            "tombstoned": list(self.tombstoned),
            "ids": self.ids,
            "id_uses": self.uses,
        }

    def lines(self) -> list[str]:
        out = [
            f"closure: {'OK' if self.closed else 'FAILED'}  orphaned calls={len(self.orphan_calls)} "
            f"results={len(self.orphan_results)} ids={len(self.orphan_handles)}"
            + (f"  tombstoned={len(self.tombstoned)}" if self.tombstoned else ""),
            f"ids followed: {self.ids} taken by later calls from earlier messages, {self.uses} uses",
        ]
        for i, c, n in self.orphan_calls:
            out.append(f"orphaned call: message {i}, {n} (id {c}) has no result")
        for i, c in self.orphan_results:
            out.append(f"orphaned result: message {i} answers call id {c}, which is not there")
        for h, v in self.orphan_handles.items():
            out.append(
                f"orphaned id {h}: used by message {', '.join(map(str, v))}, and the message "
                "defining it is not there"
            )
        return out

    def __repr__(self) -> str:
        c = self.counts()
        return f"LogReport({'closed' if self.closed else 'OPEN'}, {c})"


def check(log: Log, kept=None, pattern=None, tombstones=(), ids: bool = True) -> LogReport:
    """Order-aware closure of the kept messages (default: all): a kept result whose call is not
    kept, a kept call (not the server's) whose results are not, and an id a kept call uses whose
    defining message is not kept and no tombstone stands for (`pattern`: what else counts as an
    id, `workbench.closure.logs.flow.find`); `tombstones` are ids a tombstone in the system
    preamble stands for. `ids=False`: the calls and results alone."""
    msgs = log.messages
    made, answers = msgs.calls, msgs.answers
    keep = range(len(msgs)) if kept is None else sorted({int(i) for i in kept})
    kset = set(keep)
    call_at = {cid: i for i in keep for cid, _ in made[i]}
    answered = {cid for i in keep for cid in answers[i]}
    stored = set(log.carried)  # they answer calls of the stored response the log continues
    res = tuple(
        (i, c) for i in keep if i not in stored for c in answers[i] if call_at.get(c, len(msgs)) > i
    )
    calls = tuple(
        (i, c, n) for i in keep for c, n in made[i] if c not in answered and c not in log.server
    )
    calls += tuple((i, c, "(a call of the stored response)") for i in sorted(stored - kset)
                   for c in answers[i])  # fmt: skip
    if not ids:
        return LogReport(res, calls, {})
    f = log.flow(pattern)
    tombed = set(f.pre_tombs) | set(tombstones)
    orphans: dict[str, list[int]] = {}
    compacted = False
    ids, uses = set(), 0
    for i in keep:
        tombed.update(f.tombs[i])
        compacted = compacted or i in f.compactions
        for x, d in f.uses[i]:
            if d is not None:
                ids.add(x)
                uses += 1
            if x in tombed or (d is not None and (d < 0 or d in kset)):
                continue
            if d is None and compacted:
                continue  # a compaction stands for where it was defined
            orphans.setdefault(x, []).append(i)
    return LogReport(
        res,
        calls,
        {x: tuple(orphans[x]) for x in sorted(orphans)},
        tuple(sorted(tombed)),
        len(ids),
        uses,
    )


def approx_tokens(message: Message) -> int:
    """Default token counter, the rule of thumb of langchain-core's count_tokens_approximately:
    ceil(characters / 4) + 3 per message, over the role, the content text, the call names and
    arguments and the answered call ids, and a fixed price a media part (`MEDIA_TOKENS`). Plug
    in an exact counter (tiktoken, say) instead."""
    chars = len(message.role) + len(message.text)
    for c, n in message.calls:
        chars += len(c) + len(n)
    for a in message.answers:
        chars += len(a)
    return (chars + 3) // 4 + 3 + MEDIA_TOKENS * message.media  # ceil(chars / 4), in integers

"""What a wire format of agent logs is (`LogFormat`), the registry of formats, and what the
format modules share (required fields, calls paired by order, a note joined to content).

A format is one object, registered once (`register`), and everything that reads, checks, trims,
judges or writes a log asks it (`get(name)`) instead of branching on its name. Its contract:

- who it is: `name`; `key`, where a request body holds its messages; `system_key`, a body's
  top-level system prompt, if the format has one; `precedence`, its place when formats are
  guessed (lower is asked first); `plain`, the format a chat no other format claims reads as;
  `objects`, whether it reads a library's message objects;
- detect: `says(message)`, the field that shows a message is written in this format (or None),
  `says_body(body)`, whether a body's own keys show it, `check_message(message, i)`, what else a
  message of this format must not hold of another format;
- read: `read(obj) -> Log`, naming the message and field of whatever is wrong;
- the provider's rules: `turns(raws)`, each message's turn; `in_place(i, j, last_call, turn,
  raws)`, whether the result at message i stands where the provider takes the result of the call
  at j (`results_follow_call`: right after it, the default's one rule); `misplaced(cid, j)`, what to say when it does not; `turn_rules(log)`, what a kept subset
  can break; `starts_on_user`, whether a request starts on a person's turn; `id_field(log, m, k,
  kind)`, where a call id (or an answered one) is written;
- write: `noted(body, items, note)`, a request with the typed tombstones joined to its system
  preamble, and `write(log, items, note)`, the kept items in the shape the log came in;
- for adapters and studies: `stub(cid, name)`, a stand-in result item (None: none is written);
  `item_key(item)`, what finds an edited item's original; `as_langchain(raws)`, the messages as
  langchain-core reads them (None: it does not); `render(conversation)`, a scripted conversation
  (`workbench.closure.logs.loggen`) in this format.
"""

from __future__ import annotations

import json

from workbench.closure.logs.logtypes import Log, Message, err

STUB = (
    "[no result in context: the context editor cut the result of {name} (call {cid}); call the "
    "tool again if you need it]"
)
ORDER = "@"  # the ids `ByOrder` gives (a wire id never starts with it), which pair by order


def need(obj, key, kind, index, fld=None):
    """obj[key] if it is there and of `kind`, else the error naming the message and field."""
    if not isinstance(obj, dict) or key not in obj:
        raise err("missing required field", index, fld or key)
    if not isinstance(obj[key], kind):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise err(f"must be a {name}", index, fld or key)
    return obj[key]


def body_and_list(obj, key):
    """(body or None, the message list) of a request body or a bare list."""
    if isinstance(obj, dict):
        return obj, need(obj, key, list, None)
    if not isinstance(obj, list):
        raise err(f"expected a list of messages or a request body with '{key}'")
    return None, obj


class ByOrder:
    """Calls without ids (OpenAI's legacy `function_call`, a Responses item whose `call_id` is
    null): each gets the id `@kind:i` and is answered by the next result of its kind."""

    def __init__(self):
        self.open: dict[str, list[str]] = {}

    def call(self, i: int, kind: str = "function") -> str:
        cid = f"{ORDER}{kind}:{i}"
        self.open.setdefault(kind, []).append(cid)
        return cid

    def answer(self, i: int, fld: str, kind: str = "function", required: bool = True):
        """The oldest open call of `kind`; with none, an error if the result needs one, else
        None (a result that stands alone)."""
        waiting = self.open.get(kind)
        if waiting:
            return waiting.pop(0)
        if required:
            raise err(
                "a function result with no function_call before it (a result for an unknown call)",
                i,
                fld,
            )
        return None


def append_note(content, note: str, part: str = "text"):
    """Content (a string or a list of parts) with the note appended as text."""
    if isinstance(content, str) and content:
        return content + "\n" + note
    if isinstance(content, list):
        return [*content, {"type": part, "text": note}]
    return note


def stub_text(cid: str, name: str) -> str:
    """What a stand-in result says of the call whose result a context editor cut."""
    return STUB.format(cid=cid, name=name)


def result_text(res) -> str:
    """A scripted result as a tool message's text (a dict as JSON)."""
    return res if isinstance(res, str) else json.dumps(res)


def json_key(it) -> str:
    return json.dumps(it, sort_keys=True, default=str)


class LogFormat:
    """A wire format; the defaults are a chat of role messages whose system messages lead it."""

    name = ""
    title = ""  # how messages name it (default: its name)
    key = "messages"
    system_key: str | None = None
    precedence = 50
    plain = False
    objects = False  # it reads a library's message objects, not only decoded JSON
    results_follow_call = False  # a call's results come right after it, only results between
    starts_on_user = False
    text_part = "text"  # the type of a text part this format writes

    # --- detect -------------------------------------------------------------------------------

    def says(self, m) -> str | None:
        return None

    def says_body(self, obj: dict) -> bool:
        return False

    def check_message(self, m, i: int) -> None:
        """Raise LogError where a message of this format holds another format's parts."""

    # --- read ---------------------------------------------------------------------------------

    def read(self, obj) -> Log:
        raise NotImplementedError

    def split(self, obj) -> tuple[dict | None, list]:
        """(the body's other keys or None, its items) of a request, as sent."""
        if isinstance(obj, dict):
            return obj, obj.get(self.key, [])
        return None, obj

    def join(self, body, items):
        return items if body is None else {**body, self.key: items}

    def system_of(self, obj):
        """A request body's top-level system prompt, or None."""
        return obj.get(self.system_key) if self.system_key and isinstance(obj, dict) else None

    # --- the provider's rules -----------------------------------------------------------------

    def turns(self, raws: list) -> list[int]:
        return list(range(len(raws)))

    def in_place(self, i: int, j: int, last_call: int, turn: list, raws: list) -> bool:
        """`last_call`: the message the current run of results follows."""
        return j == last_call if self.results_follow_call else True

    def misplaced(self, cid: str, j: int) -> str:
        return (
            f"the result for call id {cid!r} must follow its call (message {j}) with only tool "
            "results between"
        )

    def turn_rules(self, log: Log) -> None:
        """Raise LogError where a kept subset breaks the provider's rules of turns."""

    def id_field(self, log: Log, m: Message, k: int, kind: str) -> str:
        """Where in message `m` its k-th call id (`kind` 'call') or answered id stands."""
        return "call_id"

    # --- write --------------------------------------------------------------------------------

    def preamble_free(self, body) -> bool:
        """Whether a note costs no new system message where the request has none."""
        return False

    def noted(self, body, items: list, note: str):
        """The request with the note joined to its system preamble: the first system message, or
        a new one."""
        first = items[0] if items else None
        if (
            isinstance(first, dict)
            and first.get("role") in ("system", "developer")
            and first.get("type", "message") == "message"
        ):
            content = append_note(first.get("content"), note, self.text_part)
            items = [{**first, "content": content}, *items[1:]]
        else:
            items = [{"role": "system", "content": note}, *items]
        return self.join(body, items)

    def write(self, log: Log, items: list, note: str):
        """The kept items in the log's shape, the note (if any) joined to the preamble."""
        return self.noted(log.body, items, note) if note else self.join(log.body, items)

    # --- for adapters and studies -------------------------------------------------------------

    def stub(self, cid: str, name: str):
        return None

    def item_key(self, it):
        return json_key(it)

    def as_langchain(self, raws: list):
        return None

    def render(self, conv):
        raise NotImplementedError(f"no scripted conversations are written in {self.name}")


REGISTRY: dict[str, LogFormat] = {}


def register(fmt: LogFormat) -> LogFormat:
    """Add a format (its name must be new); returns it."""
    if not fmt.name or fmt.name in REGISTRY:
        raise ValueError(f"a log format needs a new name; got {fmt.name!r}")
    REGISTRY[fmt.name] = fmt
    return fmt


def get(name: str) -> LogFormat:
    """The registered format `name`; ValueError naming the choices if there is none."""
    if name not in REGISTRY:
        raise ValueError(f"unknown log format {name!r}; choose one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def by_precedence() -> list[LogFormat]:
    return sorted(REGISTRY.values(), key=lambda f: f.precedence)

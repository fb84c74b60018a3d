"""What a page and the workbench say to each other, as one table.

`INBOUND` is every message a page may send: its type and each field with the types it may hold
and its default (`REQUIRED`: no default). `read` is the one reader: it refuses a message whose
type, or one of whose fields, it does not know by name, and a field of the wrong type, with one
line naming the message and the field. The explorer's messages (`set`, `upload`, `export`) are the
same in JupyterLab (anywidget's channel) and in the room; a room page adds its own (`hello`,
`predict`, `reveal`, `restore`, `open-explorer`) and wraps an explorer's message as `model`; a notebook's
kernel watch sends `watch`. `OUTBOUND` names
the messages a room page is sent, each of which `static/room.js` handles (a test checks both
sides).
"""

from __future__ import annotations

REQUIRED = object()  # a field the message must carry

_SEQ = {"seq": ((int,), 0)}  # the page's request counter: the answer carries it back

INBOUND: dict[str, dict[str, tuple[tuple[type, ...], object]]] = {
    # an explorer's (JupyterLab and the room)
    "set": {"changes": ((dict,), REQUIRED), **_SEQ},
    "upload": {"name": ((str,), "upload.jsonl"), "text": ((str,), REQUIRED), **_SEQ},
    "export": {"what": ((str,), REQUIRED), **_SEQ},
    # a room page's
    "hello": {"query": ((str,), ""), "participant": ((str,), "")},
    "predict": {"part": ((str,), REQUIRED), "choice": ((int, type(None)), None)},
    "reveal": {"part": ((str,), REQUIRED), "choice": ((int, type(None)), None)},
    "restore": {"kept": ((dict,), REQUIRED)},
    "open-explorer": {"query": ((str,), "")},
    "model": {"model": ((str,), REQUIRED), "content": ((dict,), REQUIRED)},
    # a notebook's kernel watch (widgets.KernelWatch): sent once when drawn; a send to a closed
    # comm throws, which is how a view drawn after its kernel went away finds out (no answer)
    "watch": {},
}
EXPLORER = ("set", "upload", "export")
ROOM = ("hello", "predict", "reveal", "restore", "open-explorer", "model")
WATCH = ("watch",)

OUTBOUND = {
    "state": "an explorer's fields, whole (`new`) or changed",
    "custom": "an explorer's message for its front end (a download)",
    "questions": "the workshop's questions and choices, where the page keeps its picks, and "
    "the participant id the room's tally knows the page's person by",
    "revealed": "one part's answer, its prediction locked",
    "score": "the score line",
    "note": "why the free exploration cannot open yet",
    "error": "what went wrong, in one line",
    "full": "the room is full (the socket then closes with code 4000)",
}


def _kinds(kinds: tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", dict: "an object", type(None): "null"}
    return " or ".join(names[k] for k in kinds)


def read(msg, allowed=tuple(INBOUND)) -> tuple[str, dict]:
    """(type, fields with their defaults) of one message from a page, or ValueError naming what
    is wrong. `allowed`: the types this channel takes."""
    if not isinstance(msg, dict):
        raise ValueError("a message is a JSON object")
    kind = msg.get("type")
    if not isinstance(kind, str) or kind not in allowed:
        raise ValueError(f"unknown message type {kind!r}; this page sends {', '.join(allowed)}")
    fields = INBOUND[kind]
    unknown = sorted(set(msg) - set(fields) - {"type"})
    if unknown:
        raise ValueError(f"message '{kind}': unknown field {unknown[0]!r}")
    out = {}
    for name, (kinds, default) in fields.items():
        if name not in msg:
            if default is REQUIRED:
                raise ValueError(f"message '{kind}': field '{name}' is missing")
            out[name] = default
            continue
        value = msg[name]
        if isinstance(value, bool) or not isinstance(value, kinds):  # a bool is no integer here
            raise ValueError(f"message '{kind}': field '{name}' must be {_kinds(kinds)}")
        out[name] = value
    return kind, out

"""Anthropic Messages: a request body `{"system"?, "messages", ...}` or its message list.

`tool_use` blocks `{id, name, input}`, `tool_result` blocks `{tool_use_id, content}` in the next
user turn, before any other block of that turn; server tools (`server_tool_use`, `mcp_tool_use`)
answered in the assistant's own turn, or not at all in a turn the server paused (the last one); a
`system` turn among the messages; a `compaction` block, which stands for the turns it replaced.
Consecutive messages of one role are one turn (the API merges them); a conversation starts on a
user turn (or a compaction).
"""

from __future__ import annotations

from workbench.closure.logs.formats.base import (
    LogFormat,
    append_note,
    body_and_list,
    need,
    result_text,
    stub_text,
)
from workbench.closure.logs.logtypes import Log, Messages, err, media_of, text_of

# blocks that are calls: a client `tool_use` (its `tool_result` in the next user turn), and the
# server-run `server_tool_use` / `mcp_tool_use`, answered in the same assistant turn by a
# `*_tool_result` (`web_search_tool_result`, `mcp_tool_result`, ...)
CALLS = ("tool_use", "server_tool_use", "mcp_tool_use")
ROLES = ("user", "assistant", "system")
BODY_KEYS = ("system", "anthropic_version", "stop_sequences", "top_k", "thinking", "mcp_servers")


def own_block(t) -> bool:
    """A content block type only Anthropic writes: calls, results, thinking."""
    return isinstance(t, str) and (
        t in CALLS
        or t.endswith("tool_result")
        or t in ("thinking", "redacted_thinking", "compaction")
    )


def own_content(c) -> bool:
    """Content blocks only Anthropic writes: text, calls, results or thinking blocks."""
    return isinstance(c, list) and any(
        isinstance(b, dict) and (b.get("type") == "text" or own_block(b.get("type"))) for b in c
    )


def _server_tool(t: dict) -> bool:
    """A server tool: a versioned type (`web_search_20250305`) and a name, no schema."""
    kind = t.get("type")
    return isinstance(kind, str) and kind[-8:].isdigit() and kind[-9:-8] == "_" and "name" in t


def note_in_user_turn(msg: dict, note: str) -> dict:
    """A user turn with the note as a text block after its tool_result blocks."""
    c = msg["content"]
    blocks = [{"type": "text", "text": c}] if isinstance(c, str) else list(c)
    at = 1 + max(
        (j for j, b in enumerate(blocks) if isinstance(b, dict) and b.get("type") == "tool_result"),
        default=-1,
    )
    return {**msg, "content": [*blocks[:at], {"type": "text", "text": note}, *blocks[at:]]}


class AnthropicMessages(LogFormat):
    name = "anthropic"
    system_key = "system"
    precedence = 3
    starts_on_user = True

    def says(self, m):
        c = m.get("content") if isinstance(m, dict) else None
        for k, b in enumerate(c if isinstance(c, list) else []):
            if isinstance(b, dict) and own_block(b.get("type")):
                return f"content[{k}].type"
        return None

    def says_body(self, obj) -> bool:
        tools = obj.get("tools") if isinstance(obj.get("tools"), list) else []
        return "messages" in obj and (
            any(k in obj for k in BODY_KEYS)
            or any(isinstance(t, dict) and ("input_schema" in t or _server_tool(t)) for t in tools)
        )

    def read(self, obj) -> Log:
        body, messages = body_and_list(obj, self.key)
        system = body.get("system") if body is not None else None
        if system is not None:
            text_of(system, None, "system")
        out, compactions, server = Messages(), [], []
        for i, m in enumerate(messages):
            _turn(out, i, m, compactions, server)
        # a server tool the last turn calls and does not answer: the server paused the turn, and
        # the request that sends it back lets the server go on (no result is the client's to send)
        last = len(out) - 1
        done = set(out.answers[last]) if out else set()
        paused = frozenset(c for i, c in server if i == last and c not in done)
        return Log(self.name, out, system, body, server=paused, compactions=tuple(compactions))

    def turns(self, raws) -> list[int]:
        """Consecutive messages of one role are one turn (a system message stands apart, in the
        turn before it)."""
        out, turn, prev = [], -1, None
        for raw in raws:
            role = raw["role"]
            if role != "system" and role != prev:
                turn += 1
                prev = role
            out.append(max(turn, 0))
        return out

    def in_place(self, i, j, last_call, turn, raws) -> bool:
        server_turn = turn[i] == turn[j] and raws[i].get("role") == "assistant"
        return turn[i] == turn[j] + 1 or server_turn

    def misplaced(self, cid, j) -> str:
        return (
            f"the tool_result for {cid!r} must be in the user turn right after its tool_use "
            f"(message {j})"
        )

    def id_field(self, log, m, k, kind) -> str:
        raw = m.raw if isinstance(m.raw, dict) else {}
        blocks = raw.get("content") if isinstance(raw.get("content"), list) else []
        at = [j for j, b in enumerate(blocks) if isinstance(b, dict)
              and (b.get("type") in CALLS if kind == "call"
                   else str(b.get("type")).endswith("tool_result"))]  # fmt: skip
        return f"content[{at[k] if k < len(at) else k}].{'id' if kind == 'call' else 'tool_use_id'}"

    def turn_rules(self, log) -> None:
        """A user turn first (unless the conversation opens on a compaction), and in each user
        turn (consecutive user messages are one) its tool_result blocks before any other block."""
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
                        f"a tool_result after another block ({where}): a turn's tool_result "
                        "blocks come first",
                        i,
                        f"content[{k}].type",
                    )

    def preamble_free(self, body) -> bool:
        return body is None  # a bare list carries the note in its first user turn

    def noted(self, body, items, note):
        """The body's `system` with the note appended; a bare list carries it in its first user
        turn (a list has no system prompt)."""
        if body is None:
            return [note_in_user_turn(items[0], note), *items[1:]] if items else items
        return {**body, "system": append_note(body.get("system"), note), self.key: items}

    def stub(self, cid, name):
        result = {"type": "tool_result", "tool_use_id": cid, "content": stub_text(cid, name)}
        return {"role": "user", "content": [result]}

    def render(self, conv) -> dict:
        system, msgs = None, []

        def push(role, blocks):
            # turns alternate: consecutive same-role steps share one turn (a turn's tool_result
            # blocks first), so an assistant's text and its tool calls share a message
            if msgs and msgs[-1]["role"] == role:
                merged = msgs[-1]["content"] + blocks
                merged.sort(key=lambda b: b["type"] != "tool_result")
                msgs[-1]["content"] = merged
            else:
                msgs.append({"role": role, "content": blocks})

        for step in conv:
            kind = step[0]
            if kind == "system":
                system = step[1]
            elif kind in ("user", "assistant"):
                push(kind, [{"type": "text", "text": step[1]}])
            elif kind == "calls":
                text = [{"type": "text", "text": step[1]}] if step[1] else []
                uses = [{"type": "tool_use", "id": c, "name": n, "input": a} for c, n, a in step[2]]
                push("assistant", text + uses)
            else:
                push("user", [{"type": "tool_result", "tool_use_id": cid,
                               "content": res if isinstance(res, list) else result_text(res)}
                              for cid, res in step[1]])  # fmt: skip
        body = {"messages": msgs}
        return body if system is None else {"system": system, **body}


def _turn(out: Messages, i: int, m, compactions: list, server: list) -> None:
    if not isinstance(m, dict):
        raise err("must be an object", i)
    role = need(m, "role", str, i)
    if role not in ROLES:
        raise err(f"must be 'user', 'assistant' or 'system', got {role!r}", i, "role")
    content = need(m, "content", (str, list), i)
    calls, args, answers, said = [], [], [], False
    for k, b in enumerate(content if isinstance(content, list) else ()):
        t = b.get("type") if isinstance(b, dict) else None
        if t in CALLS:
            cid = need(b, "id", str, i, f"content[{k}].id")
            calls.append((cid, need(b, "name", str, i, f"content[{k}].name")))
            args.append(b.get("input", {}))
            if t != "tool_use":
                server.append((i, cid))
        elif isinstance(t, str) and t.endswith("tool_result"):
            if t != "tool_result" and role != "assistant":
                raise err(f"a {t} block belongs in the assistant turn", i, f"content[{k}].type")
            answers.append(need(b, "tool_use_id", str, i, f"content[{k}].tool_use_id"))
        elif t == "compaction":
            compactions.append(i)
        elif role == "user" and t == "text" and b.get("text", "").strip():
            said = True  # a person's words beside the results: the person's turn
    if isinstance(content, str) and content.strip():
        said = True
    # a user turn of tool results only is a tool message; one where the person also writes is
    # the person's turn (its results still pair with the call before it)
    kind, given = role, None
    if role == "assistant" and (answers or compactions[-1:] == [i]):
        # what the server's tools returned, and what a compaction says of the turns it replaced:
        # they define ids, as a result does
        given = text_of([b for b in content if isinstance(b, dict) and (
            str(b.get("type")).endswith("tool_result") or b.get("type") == "compaction")],
            i, "content")  # fmt: skip
    elif answers and not said:
        kind = "tool"
    out.add(kind, text_of(content, i, "content"), tuple(calls), tuple(answers), m,
            tuple(args), media_of(content), given)  # fmt: skip


FORMAT = AnthropicMessages()

"""Our pydantic-ai hooks alone, timed in a process that imports pydantic-ai and no other
framework (`workbench.agents.bench.hooks`; `python -m workbench.agents.bench.hooks_pydantic_ai N
R F`)."""

from __future__ import annotations

import sys

from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from workbench.agents import for_pydantic_ai
from workbench.agents.bench.hooks import Conversation, State, awaiter, main
from workbench.closure.logs import loggen


def pydantic_messages(dicts: list[dict]) -> list:
    """pydantic-ai messages of an OpenAI chat log (the generated long conversation)."""
    out, parts = [], []
    for d in dicts:
        if d["role"] == "assistant":
            if parts:
                out.append(ModelRequest(parts=parts))
                parts = []
            ps = [TextPart(d["content"])] if d.get("content") else []
            ps += [ToolCallPart(tc["function"]["name"], tc["function"]["arguments"],
                                tool_call_id=tc["id"]) for tc in d.get("tool_calls") or []]  # fmt: skip
            out.append(ModelResponse(parts=ps or [TextPart("")]))
        elif d["role"] == "tool":
            parts.append(ToolReturnPart("tool", d["content"], tool_call_id=d["tool_call_id"]))
        elif d["role"] == "system":
            parts.append(SystemPromptPart(d["content"]))
        else:
            parts.append(UserPromptPart(d["content"]))
    if parts:
        out.append(ModelRequest(parts=parts))
    return out


class Ctx:
    """The least of a pydantic-ai RunContext a hook reads: the run's messages and its
    conversation (pydantic-ai gives every run one, kept across runs of one message history)."""

    def __init__(self, messages, conversation_id="bench"):
        self.messages, self.conversation_id = messages, conversation_id


class RequestContext:
    def __init__(self, messages):
        self.messages = messages


def built(n_messages: int, rounds: int) -> dict:
    """name -> (setup, grow, one call), each on the pydantic-ai form of the long conversation: the
    history capability on the whole request, and the guard behind a keep-last history processor's
    cut (the newest two thirds sent), in a conversation."""
    c = Conversation(n_messages, rounds)

    def make(hook, cut: bool):
        pyd = pydantic_messages(loggen.to_openai(c.conv))
        at = c.lengths(lambda conv: pydantic_messages(loggen.to_openai(conv)))
        wait = awaiter()

        def call(st):
            hist = pyd[: at[st.k]]
            sent = hist[len(hist) // 3 :] if cut else hist
            wait(st.hook.before_model_request(Ctx(hist), RequestContext(list(sent))))

        return lambda: State(hook(), rounds), State.grow, call

    return {
        "pydantic-ai ClosureHistory": lambda: make(
            lambda: for_pydantic_ai.ClosureHistory(max_tokens=c.budget), False),
        "pydantic-ai ClosureGuard (a front cut)": lambda: make(for_pydantic_ai.ClosureGuard, True),
    }  # fmt: skip


if __name__ == "__main__":
    main(built, sys.argv[1:])

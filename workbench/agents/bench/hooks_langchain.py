"""Our LangChain hooks alone, timed in a process that imports LangChain and no other framework
(`workbench.agents.bench.hooks`; `python -m workbench.agents.bench.hooks_langchain N R F`)."""

from __future__ import annotations

import sys
import uuid

from langchain_core.messages import messages_from_dict
from langchain_core.runnables.config import var_child_runnable_config

from workbench.agents import for_langchain
from workbench.agents.bench.hooks import Conversation, State, main
from workbench.closure.logs import loggen


class Request:
    """The least of a LangChain ModelRequest a hook reads (its messages and system message)."""

    def __init__(self, messages, system_message=None, state=None):
        self.messages, self.system_message, self.state = messages, system_message, state or {}

    def override(self, **kw):
        return Request(kw.get("messages", self.messages),
                       kw.get("system_message", self.system_message), self.state)  # fmt: skip


def built(n_messages: int, rounds: int) -> dict:
    """name -> (setup, grow, one call), each on the LangChain form of the long conversation: the
    trim on the whole request, the guard behind a foreign cut (the oldest third gone, a front
    orphan), each in a LangGraph thread as in an agent with a checkpointer."""
    c = Conversation(n_messages, rounds)

    def make(hook, cut: bool):
        lc = messages_from_dict(loggen.to_langchain(c.conv))
        at = c.lengths(loggen.to_langchain)
        for k, m in enumerate(lc):  # a LangGraph state's messages each carry an id
            m.id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench/{k}"))  # (`add_messages`)

        def call(st):
            hist = lc[: at[st.k]]
            sent = hist[len(hist) // 3 :] if cut else hist[1:]
            token = var_child_runnable_config.set({"configurable": {"thread_id": "bench"}})
            try:
                st.hook.wrap_model_call(Request(sent, hist[0], {"messages": hist}), lambda r: r)
            finally:
                var_child_runnable_config.reset(token)

        return lambda: State(hook(), rounds), State.grow, call

    return {
        "langchain ClosureMiddleware": lambda: make(
            lambda: for_langchain.ClosureMiddleware(c.budget), False),
        "langchain ClosureMiddleware (relevance)": lambda: make(  # the benchmark's `closure`
            lambda: for_langchain.ClosureMiddleware(c.budget, strategy="relevance"), False),
        "langchain ClosureGuard (a front cut)": lambda: make(for_langchain.ClosureGuard, True),
    }  # fmt: skip


if __name__ == "__main__":
    main(built, sys.argv[1:])

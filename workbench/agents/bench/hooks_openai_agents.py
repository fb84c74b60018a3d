"""Our Agents SDK hooks alone, timed in a process that imports the SDK and no other framework
(`workbench.agents.bench.hooks`; `python -m workbench.agents.bench.hooks_openai_agents N R F`)."""

from __future__ import annotations

import sys

from agents import SQLiteSession

from workbench.agents import for_openai_agents
from workbench.agents.bench.hooks import Conversation, State, awaiter, main
from workbench.agents.bench.world import SYSTEM
from workbench.closure.logs import loggen


def _data(items):
    class Data:
        model_data = for_openai_agents.ModelInputData(input=items, instructions=SYSTEM)

    return Data()


def built(n_messages: int, rounds: int) -> dict:
    """name -> (setup, grow, one call), each on the Responses form of the long conversation: the
    input filter on the whole input, and the guard given a session whose `limit` sent the newest
    two thirds (the store holds it all; the SDK stores a round's items before the next call)."""
    c = Conversation(n_messages, rounds)

    def trim():
        rs, at = loggen.to_responses(c.conv), c.lengths(loggen.to_responses)
        hook = lambda: for_openai_agents.closure_input_filter(c.budget)  # noqa: E731
        return lambda: State(hook(), rounds), State.grow, lambda st: st.hook(_data(rs[: at[st.k]]))

    def session():
        rs, at = loggen.to_responses(c.conv), c.lengths(loggen.to_responses)
        wait = awaiter()  # the hook awaited on one loop, as the SDK awaits it

        def setup():
            store = SQLiteSession("bench")
            wait(store.add_items(rs[: at[0]]))
            st = State(for_openai_agents.ClosureGuard(session=store), rounds)
            st.session = store
            return st

        def grow(st):
            st.grow()
            wait(st.session.add_items(rs[at[st.k - 1] : at[st.k]]))

        def call(st):
            hist = rs[: at[st.k]]
            wait(st.hook(_data(hist[len(hist) // 3 :])))

        return setup, grow, call

    return {
        "openai-agents closure_input_filter": trim,
        "openai-agents ClosureGuard (a session limit)": session,
    }


if __name__ == "__main__":
    main(built, sys.argv[1:])

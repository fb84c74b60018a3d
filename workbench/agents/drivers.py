"""The benchmark's three drivers: the scripted world through LangChain's `create_agent` (with a
checkpointer), the OpenAI Agents SDK's `Runner` (with a session) and a pydantic-ai `Agent` (with
its message history), each with the framework's own test double for the model (a LangChain fake
chat model that binds tools, a subclass of the SDK's `Model`, pydantic-ai's `FunctionModel`) and
the policy under test. A driver returns (one person's turn -> None, the records of our hooks).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import uuid
import weakref
from typing import Any

from agents import Agent as SdkAgent
from agents import RunConfig, Runner, SQLiteSession, function_tool
from agents.extensions.tool_output_trimmer import ToolOutputTrimmer
from agents.items import ModelResponse as SdkResponse
from agents.memory import SessionSettings
from agents.models.interface import Model as SdkModel
from agents.usage import Usage
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
)
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, messages_from_dict, trim_messages
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic_ai import Agent as PydAgent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import FunctionModel

from workbench.agents import for_langchain, for_openai_agents, for_pydantic_ai, provider
from workbench.agents.world import HANDLE, Seen
from workbench.closure.logs import loggen
from workbench.closure.logs.compare import LC_SETTINGS

SYSTEM = "You run data jobs for the analytics team. Use the tools; keep answers short."
DESCRIBE = {
    "submit_job": "Submit the job for a task; returns its id.",
    "poll_job": "Poll a job by its id; a job is ready once polled.",
    "fetch_result": "Fetch a ready job's result by its id.",
    "read_notes": "Read the team's notes on a topic.",
}


def run_sync(coro):
    """Run a coroutine to the end, also where an event loop already runs (a notebook's kernel):
    then on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def awaiter():
    """A function awaiting coroutines on one event loop of its own, kept while the function is, as
    a framework awaits its hooks: inside a loop that runs on, not a new one per call
    (`asyncio.run`, which on Python 3.11 also formats the repr of what the coroutine returned
    when it puts the SIGINT handler back: ~10 ms for a request of 10^4 items, the bench's cost,
    not the hook's). Where a loop already runs (a notebook's kernel): `run_sync`."""
    loop = asyncio.new_event_loop()

    def run(coro):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return loop.run_until_complete(coro)
        return run_sync(coro)

    weakref.finalize(run, loop.close)
    return run


def _tool_functions(tally):
    def submit_job(task: str) -> str:
        return tally.tool("submit_job", {"task": task})

    def poll_job(job_id: str) -> str:
        return tally.tool("poll_job", {"job_id": job_id})

    def fetch_result(job_id: str) -> str:
        return tally.tool("fetch_result", {"job_id": job_id})

    def read_notes(topic: str) -> str:
        return tally.tool("read_notes", {"topic": topic})

    fns = (submit_job, poll_job, fetch_result, read_notes)
    for f in fns:
        f.__doc__ = DESCRIBE[f.__name__]
    return fns


def _strategy(policy: str) -> str:
    return "last" if policy == "closure last" else "relevance"


def _call_id(tally) -> str:
    return f"call_{tally.seed}_{tally.turn}_{tally.calls}"


# --- LangChain --------------------------------------------------------------------------------


class ScriptedChat(GenericFakeChatModel):
    """LangChain's generic fake chat model, answering from the request it is given."""

    respond: Any = None

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])


class FakeSummarizer(GenericFakeChatModel):
    """A summarizer that keeps what a careful one would: every line naming a job, as written."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        text = "\n".join(str(m.content) for m in messages)
        keep = [ln.strip()[:160] for ln in text.splitlines() if HANDLE.search(ln)]
        summary = "Summary of the conversation so far.\n" + "\n".join(dict.fromkeys(keep))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(summary))])


class TrimMessagesHook(AgentMiddleware):
    """langchain-core's `trim_messages` in a `wrap_model_call` hook: as its docs set it up for
    chat models, or plain `strategy="last"` (`setting="langchain (last, include_system)"`)."""

    def __init__(self, max_tokens: int, setting: str = "langchain (documented)"):
        super().__init__()
        self.max_tokens, self.setting = max_tokens, setting

    def wrap_model_call(self, request, handler):
        kw = {k: v for k, v in LC_SETTINGS[self.setting].items() if k != "include_system"}
        msgs = trim_messages(request.messages, max_tokens=self.max_tokens,
                             token_counter=count_tokens_approximately, **kw)  # fmt: skip
        return handler(request.override(messages=msgs))


def _lc_view(messages) -> list[Seen]:
    role = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
    out = []
    for m in messages:
        text = m.content if isinstance(m.content, str) else json.dumps(m.content)
        calls = [json.dumps(tc.get("args")) for tc in getattr(m, "tool_calls", None) or []]
        out.append(Seen(role.get(m.type, "user"), "\n".join([text, *calls])))
    return out


def langchain_driver(policy: str, budget: int, window: int, tally):
    def respond(messages):
        problems = provider.langchain_problems(messages, window)
        d = tally.request(_lc_view(messages), problems, list(messages), "langchain")
        if d.tool is None:
            return AIMessage(d.text)
        return AIMessage("", tool_calls=[{"id": _call_id(tally), "name": d.tool, "args": d.args}])

    ours = []
    mw: list = []
    base = policy.replace(" + guard", "")
    if base.startswith("closure"):
        ours.append(for_langchain.ClosureMiddleware(max_tokens=budget, strategy=_strategy(base),
                                                    persist=base.endswith("persist")))  # fmt: skip
        mw = ours[:]
    elif base == "trim_messages":
        mw = [TrimMessagesHook(budget)]
    elif base == "trim_messages (last)":
        mw = [TrimMessagesHook(budget, "langchain (last, include_system)")]
    elif base == "summarization":
        summarizer = FakeSummarizer(messages=iter(()))
        mw = [SummarizationMiddleware(summarizer, trigger=("tokens", budget),
                                      keep=("tokens", budget // 2))]  # fmt: skip
    elif base == "clear tool uses":
        mw = [ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=budget, keep=2)])]
    if policy.endswith("+ guard"):
        ours.append(for_langchain.ClosureGuard(max_tokens=budget))
        mw.append(ours[-1])
    tools = [StructuredTool.from_function(f) for f in _tool_functions(tally)]
    model = ScriptedChat(messages=iter(()), respond=respond)
    agent = create_agent(model, tools, system_prompt=SYSTEM, middleware=mw,
                         checkpointer=InMemorySaver())  # fmt: skip
    cfg = {"configurable": {"thread_id": f"run-{tally.seed}"}, "recursion_limit": 12}

    def one_turn(text: str) -> None:
        agent.invoke({"messages": [HumanMessage(text)]}, cfg)

    return one_turn, [m.records for m in ours]


# --- the OpenAI Agents SDK --------------------------------------------------------------------


def _sdk_view(items, instructions) -> list[Seen]:
    out = [Seen("system", instructions)] if instructions else []
    for it in items:
        kind = it.get("type", "message")
        if kind == "function_call":
            out.append(Seen("assistant", it.get("arguments", "")))
        elif kind == "function_call_output":
            o = it.get("output")
            out.append(Seen("tool", o if isinstance(o, str) else json.dumps(o)))
        elif kind == "message":
            c = it.get("content")
            text = c if isinstance(c, str) else " ".join(
                p.get("text", "") for p in c or [] if isinstance(p, dict))  # fmt: skip
            out.append(Seen({"developer": "system"}.get(it.get("role"), it.get("role")), text))
    return out


class ScriptedModel(SdkModel):
    """A subclass of the Agents SDK's `Model`, answering from the input items it is given."""

    def __init__(self, tally, window: int):
        self.tally, self.window = tally, window

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema,
                           handoffs, tracing, **kwargs):  # fmt: skip
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        items = [for_openai_agents._plain(x) for x in items]
        problems = provider.responses_problems(items, self.window)
        body = (
            {"input": items, "instructions": system_instructions} if system_instructions else items
        )
        d = self.tally.request(_sdk_view(items, system_instructions), problems, body, "responses")
        n = f"{self.tally.seed}_{self.tally.turn}_{self.tally.calls}"
        if d.tool is None:
            text = ResponseOutputText(type="output_text", text=d.text, annotations=[])
            out = [ResponseOutputMessage(id=f"msg_{n}", type="message", role="assistant",
                                         status="completed", content=[text])]  # fmt: skip
        else:
            out = [ResponseFunctionToolCall(type="function_call", call_id=f"call_{n}", id=f"fc_{n}",
                                            name=d.tool, arguments=json.dumps(d.args),
                                            status="completed")]  # fmt: skip
        return SdkResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the benchmark does not stream")


class KeepLastItems:
    """A `call_model_input_filter` as users write them: the last n input items."""

    def __init__(self, n: int):
        self.n = n

    def __call__(self, data):
        md = data.model_data
        return for_openai_agents.ModelInputData(
            input=md.input[-self.n :], instructions=md.instructions
        )


def openai_agents_driver(policy: str, budget: int, window: int, tally):
    ours, flt = [], None
    settings = None
    base = policy.replace(" + guard", "")
    if base.startswith("closure"):
        flt = for_openai_agents.closure_input_filter(max_tokens=budget, strategy=_strategy(base))
        ours.append(flt)
    elif base == "tool output trimmer":
        flt = ToolOutputTrimmer()
    elif base == "session limit":
        settings = SessionSettings(limit=max(4, budget // 50))
    elif base == "keep last n filter":
        flt = KeepLastItems(max(4, budget // 50))
    session = SQLiteSession(f"run-{tally.seed}", session_settings=settings)
    if policy.endswith("+ guard"):
        # given the session, the guard repairs from its whole store, not only what the SDK sent
        flt = for_openai_agents.ClosureGuard(flt, max_tokens=budget, session=session)
        ours.append(flt)
    tools = [function_tool(f) for f in _tool_functions(tally)]
    agent = SdkAgent(
        name="jobs", instructions=SYSTEM, model=ScriptedModel(tally, window), tools=tools
    )
    config = RunConfig(call_model_input_filter=flt, tracing_disabled=True)

    def one_turn(text: str) -> None:
        run_sync(Runner.run(agent, text, session=session, run_config=config, max_turns=6))

    return one_turn, [f.records for f in ours]


# --- pydantic-ai ------------------------------------------------------------------------------


def _pyd_view(messages) -> list[Seen]:
    out = []
    for m in messages:
        if isinstance(m, ModelResponse):
            for p in m.parts:
                if isinstance(p, TextPart):
                    out.append(Seen("assistant", p.content))
                elif isinstance(p, ToolCallPart):
                    out.append(Seen("assistant", p.args_as_json_str()))
            continue
        for p in m.parts:
            if isinstance(p, SystemPromptPart):
                out.append(Seen("system", p.content))
            elif isinstance(p, UserPromptPart):
                out.append(
                    Seen("user", p.content if isinstance(p.content, str) else str(p.content))
                )
            elif isinstance(p, ToolReturnPart):
                out.append(Seen("tool", p.model_response_str()))
    return out


def keep_last(n: int):
    """The history processor pydantic-ai's docs show: the last n messages."""

    def processor(messages):
        return messages[-n:]

    return processor


def pydantic_ai_driver(policy: str, budget: int, window: int, tally):
    def respond(messages, info):
        problems = provider.pydantic_problems(messages, window)
        dicts = for_pydantic_ai.explode(messages)[0]
        d = tally.request(_pyd_view(messages), problems, dicts, "openai")
        if d.tool is None:
            return ModelResponse(parts=[TextPart(d.text)])
        return ModelResponse(parts=[ToolCallPart(d.tool, d.args, tool_call_id=_call_id(tally))])

    ours, caps = [], []
    base = policy.replace(" + guard", "")
    if base.startswith("closure"):
        ours.append(for_pydantic_ai.ClosureHistory(max_tokens=budget, strategy=_strategy(base)))
        caps = ours[:]
    elif base == "keep last n":
        caps = [ProcessHistory(keep_last(max(3, budget // 60)))]
    if policy.endswith("+ guard"):
        ours.append(for_pydantic_ai.ClosureGuard(max_tokens=budget))
        caps.append(ours[-1])
    agent = PydAgent(FunctionModel(respond), system_prompt=SYSTEM, capabilities=caps,
                     tools=list(_tool_functions(tally)))  # fmt: skip
    history: list = []

    def one_turn(text: str) -> None:
        r = run_sync(agent.run(text, message_history=history or None))
        history[:] = r.all_messages()

    return one_turn, [c.records for c in ours]


DRIVERS = {
    "langchain": langchain_driver,
    "openai-agents": openai_agents_driver,
    "pydantic-ai": pydantic_ai_driver,
}


# --- each hook alone, on a long history (make bench) -------------------------------------------


def _pyd_messages(dicts: list[dict]) -> list:
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


class _Request:
    """The least of a LangChain ModelRequest a hook reads (its messages and system message)."""

    def __init__(self, messages, system_message=None, state=None):
        self.messages, self.system_message, self.state = messages, system_message, state or {}

    def override(self, **kw):
        return _Request(kw.get("messages", self.messages),
                        kw.get("system_message", self.system_message), self.state)  # fmt: skip


class _Ctx:
    """The least of a pydantic-ai RunContext a hook reads: the run's messages and its
    conversation (pydantic-ai gives every run one, kept across runs of one message history)."""

    def __init__(self, messages, conversation_id="bench"):
        self.messages, self.conversation_id = messages, conversation_id


class _ReqCtx:
    def __init__(self, messages):
        self.messages = messages


ROUND = 7  # conversation entries of one round of the long conversation (`loggen`)


def hooks(n_messages: int, rounds: int = 20) -> dict:
    """name -> (setup, next, one call) for each of our hooks on the generated long conversation of
    about `n_messages` messages, at a budget a tenth of its tokens. `setup()` gives a new
    adapter on that history; `next(state)`, run before each later call and not timed, grows the
    history by one round (a person's turn, three calls and their results, the reply: the same
    objects as before, then the new ones, as a running agent's state holds them), at most
    `rounds` times."""
    base = loggen.long_conversation(n_messages)
    conv = loggen.long_conversation(n_messages + ROUND * rounds)  # the same, `rounds` longer
    ends = [len(base) + ROUND * k for k in range(rounds + 1)]
    assert conv[: len(base)] == base and len(conv) == ends[-1]

    def lengths(render) -> list[int]:
        return [len(render(conv[:e])) for e in ends]

    lc, lc_at = messages_from_dict(loggen.to_langchain(conv)), lengths(loggen.to_langchain)
    for k, m in enumerate(lc):  # a LangGraph state's messages each carry an id (`add_messages`
        m.id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"bench/{k}"))  # gives a uuid4): fixed here
    rs, rs_at = loggen.to_responses(conv), lengths(loggen.to_responses)
    pyd = _pyd_messages(loggen.to_openai(conv))
    pyd_at = lengths(lambda c: _pyd_messages(loggen.to_openai(c)))
    budget = max(count_tokens_approximately(lc[: lc_at[0]]) // 10, 100)
    wait = awaiter()  # the async hooks awaited on one loop, as their framework awaits them

    class State:
        def __init__(self, hook):
            self.hook, self.k = hook, 0

    def grow(state) -> None:
        state.k += 1
        if state.k > rounds:
            raise ValueError(f"the bench grows a history at most {rounds} rounds")

    def in_thread(call):  # a LangGraph thread, as in an agent with a checkpointer
        token = var_child_runnable_config.set({"configurable": {"thread_id": "bench"}})
        try:
            call()
        finally:
            var_child_runnable_config.reset(token)

    def lc_call(st):
        hist = lc[: lc_at[st.k]]
        in_thread(lambda: st.hook.wrap_model_call(_Request(hist[1:], hist[0], {"messages": hist}),
                                                  lambda r: r))  # fmt: skip

    def sdk_call(st):
        class Data:
            model_data = for_openai_agents.ModelInputData(input=rs[: rs_at[st.k]],
                                                          instructions=SYSTEM)  # fmt: skip

        st.hook(Data())

    def pyd_call(st):
        hist = pyd[: pyd_at[st.k]]
        wait(st.hook.before_model_request(_Ctx(hist), _ReqCtx(list(hist))))

    def lc_guard_call(st):  # a foreign cut: the oldest third gone, leaving a front orphan; in a
        hist = lc[: lc_at[st.k]]  # thread: the guard's store takes the state in
        cut = _Request(hist[len(hist) // 3 :], hist[0], {"messages": hist})
        in_thread(lambda: st.hook.wrap_model_call(cut, lambda r: r))

    def sdk_session_guard():  # a session limit: the store holds all, the input its newest 2/3
        st = State(None)
        st.session = SQLiteSession("bench")
        wait(st.session.add_items(rs[: rs_at[0]]))
        st.hook = for_openai_agents.ClosureGuard(session=st.session)
        st.input = lambda: sdk_session_input(st)  # (what `bench.session_floor` reads too)
        return st

    def sdk_session_input(st) -> list:  # what the SDK sends under the limit: the newest 2/3
        hist = rs[: rs_at[st.k]]
        return hist[len(hist) // 3 :]

    def sdk_session_grow(st):  # the SDK stores the round's items after it, before the next call
        grow(st)
        wait(st.session.add_items(rs[rs_at[st.k - 1] : rs_at[st.k]]))

    def sdk_session_call(st):
        class Data:
            model_data = for_openai_agents.ModelInputData(input=st.input(), instructions=SYSTEM)

        wait(st.hook(Data()))

    def new(make):
        return lambda: State(make())

    return {
        "langchain ClosureMiddleware": (
            new(lambda: for_langchain.ClosureMiddleware(budget)), grow, lc_call),
        "langchain ClosureMiddleware (relevance)": (  # the benchmark's `closure`
            new(lambda: for_langchain.ClosureMiddleware(budget, strategy="relevance")), grow,
            lc_call),
        "langchain ClosureGuard (a front cut)": (
            new(for_langchain.ClosureGuard), grow, lc_guard_call),
        "openai-agents closure_input_filter": (
            new(lambda: for_openai_agents.closure_input_filter(budget)), grow, sdk_call),
        "openai-agents ClosureGuard (a session limit)": (
            sdk_session_guard, sdk_session_grow, sdk_session_call),
        "pydantic-ai ClosureHistory": (
            new(lambda: for_pydantic_ai.ClosureHistory(max_tokens=budget)), grow, pyd_call),
    }  # fmt: skip

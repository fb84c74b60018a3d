"""The benchmark's three drivers: the scripted world through LangChain's `create_agent` (with a
checkpointer), the OpenAI Agents SDK's `Runner` (with a session) and a pydantic-ai `Agent` (with
its message history), each with the framework's own test double for the model (a LangChain fake
chat model that binds tools, a subclass of the SDK's `Model`, pydantic-ai's `FunctionModel`) and
the policy under test. A driver returns (one person's turn -> None, the records of our hooks).
"""

from __future__ import annotations

import json
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
from langchain_core.messages import AIMessage, HumanMessage, trim_messages
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
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
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import FunctionModel

from workbench.agents import for_langchain, for_openai_agents, for_pydantic_ai
from workbench.agents.bench import judge
from workbench.agents.bench.hooks import run_sync
from workbench.agents.bench.policies import Policy
from workbench.agents.bench.world import HANDLE, SYSTEM, Seen
from workbench.closure.logs.compare import LC_SETTINGS

DESCRIBE = {
    "submit_job": "Submit the job for a task; returns its id.",
    "poll_job": "Poll a job by its id; a job is ready once polled.",
    "fetch_result": "Fetch a ready job's result by its id.",
    "read_notes": "Read the team's notes on a topic.",
}


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


def langchain_driver(policy: Policy, budget: int, window: int, tally):
    def respond(messages):
        problems = judge.langchain_problems(messages, window)
        d = tally.request(_lc_view(messages), problems, list(messages), "langchain")
        if d.tool is None:
            return AIMessage(d.text)
        return AIMessage("", tool_calls=[{"id": _call_id(tally), "name": d.tool, "args": d.args}])

    editors = {
        "none": lambda: [],
        "closure": lambda: [for_langchain.ClosureMiddleware(
            max_tokens=budget, strategy=policy.strategy, persist=policy.persist)],
        "trim_messages": lambda: [TrimMessagesHook(budget)],
        "trim_messages (last)": lambda: [TrimMessagesHook(budget,
                                                          "langchain (last, include_system)")],
        "summarization": lambda: [SummarizationMiddleware(
            FakeSummarizer(messages=iter(())), trigger=("tokens", budget),
            keep=("tokens", budget // 2))],
        "clear tool uses": lambda: [ContextEditingMiddleware(
            edits=[ClearToolUsesEdit(trigger=budget, keep=2)])],
    }  # fmt: skip
    mw = editors[policy.editor]()
    if policy.guard:
        mw.append(for_langchain.ClosureGuard(max_tokens=budget))
    ours = [m for m in mw if hasattr(m, "records")]
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
        problems = judge.responses_problems(items, self.window)
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


def openai_agents_driver(policy: Policy, budget: int, window: int, tally):
    n = max(4, budget // 50)  # the built-ins' item count at this budget
    editors = {
        "none": lambda: None,
        "closure": lambda: for_openai_agents.closure_input_filter(max_tokens=budget,
                                                                  strategy=policy.strategy),
        "tool output trimmer": ToolOutputTrimmer,
        "session limit": lambda: None,  # the session's own setting, below
        "keep last n filter": lambda: KeepLastItems(n),
    }  # fmt: skip
    flt = editors[policy.editor]()
    limited = SessionSettings(limit=n) if policy.editor == "session limit" else None
    session = SQLiteSession(f"run-{tally.seed}", session_settings=limited)
    if policy.guard:
        # given the session, the guard repairs from its whole store, not only what the SDK sent
        flt = for_openai_agents.ClosureGuard(flt, max_tokens=budget, session=session)
    ours = [flt] if hasattr(flt, "records") else []
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


def pydantic_ai_driver(policy: Policy, budget: int, window: int, tally):
    def respond(messages, info):
        problems = judge.pydantic_problems(messages, window)
        dicts = for_pydantic_ai.explode(messages)[0]
        d = tally.request(_pyd_view(messages), problems, dicts, "openai")
        if d.tool is None:
            return ModelResponse(parts=[TextPart(d.text)])
        return ModelResponse(parts=[ToolCallPart(d.tool, d.args, tool_call_id=_call_id(tally))])

    editors = {
        "none": lambda: [],
        "closure": lambda: [for_pydantic_ai.ClosureHistory(max_tokens=budget,
                                                           strategy=policy.strategy)],
        "keep last n": lambda: [ProcessHistory(keep_last(max(3, budget // 60)))],
    }  # fmt: skip
    caps = editors[policy.editor]()
    if policy.guard:
        caps.append(for_pydantic_ai.ClosureGuard(max_tokens=budget))
    ours = [c for c in caps if hasattr(c, "records")]
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

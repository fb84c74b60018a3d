"""workbench.agents in pydantic-ai's real loop (`run_sync` / `run`), offline with its
`FunctionModel`: what the model was sent is what these tests inspect, judged by the judge written
apart from the trimmer; the library never touches the garbage collector."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent as PydAgent  # noqa: E402
from pydantic_ai.capabilities import ProcessHistory  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    CompactionPart,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import FunctionModel  # noqa: E402

import workbench.agents as wa  # noqa: E402
from workbench.agents.bench import drivers, judge  # noqa: E402
from workbench.agents.core import ClosureError  # noqa: E402
from workbench.closure import logs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

from scripted import ASYNC, PAD, TURNS, Script, poll, submit  # noqa: E402

# --- pydantic-ai, sync and async ----------------------------------------------------------------


def _pyd_run(capabilities, script, turns=TURNS, stored=False, aio=False):
    """Each turn one run given the last one's `all_messages()` (`stored`: read back from JSON, as
    an app that keeps its history in a database does)."""
    sent = []

    def fn(messages, info):
        sent.append(list(messages))
        view = drivers._pyd_view(messages)
        tool, x = script.decide([(v.role, v.text) for v in view])
        if tool is None:
            return ModelResponse(parts=[TextPart(x)])
        return ModelResponse(parts=[ToolCallPart(tool, x, tool_call_id=f"c{len(sent)}")])

    agent = PydAgent(FunctionModel(fn), system_prompt="Run jobs.", capabilities=capabilities,
                     tools=[submit, poll])  # fmt: skip
    history = None
    for t in turns:
        if aio:
            r = drivers.run_sync(agent.run(t, message_history=history))
        else:
            r = agent.run_sync(t, message_history=history)
        history = r.all_messages()
        if stored:
            history = ModelMessagesTypeAdapter.validate_json(
                ModelMessagesTypeAdapter.dump_json(history)
            )
    return sent, history


@pytest.mark.parametrize("aio", ASYNC, ids=["run_sync", "run"])
def test_pydantic_ai_history_capability_trims_closed(aio):
    cap = wa.ClosureHistory(max_tokens=260, strategy="relevance")
    sent, history = _pyd_run([cap], Script(), aio=aio)
    assert len(cap.records) == len(sent) and any(r.dropped for r in cap.records)
    assert all(not judge.pydantic_problems(msgs) for msgs in sent)
    assert len(history) > len(sent[-1])  # request-only: the run's history keeps everything


@pytest.mark.parametrize("stored", [False, True], ids=["in memory", "read back from JSON"])
@pytest.mark.parametrize("aio", ASYNC, ids=["run_sync", "run"])
def test_pydantic_ai_guard_after_a_history_processor_that_cuts_calls_off(stored, aio):
    """A processor that keeps only the newest message after a tool ran leaves a tool return whose
    call is gone, from the request and from the run's own history: pydantic-ai then silently
    sends an empty request. The guard keeps every message of the conversation it has seen, so
    it brings the call back; in raise mode it stops the request with one error naming it."""

    def cut(messages):
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            return messages[-1:]
        return messages

    bare, _ = _pyd_run([ProcessHistory(cut)], Script(), stored=stored, aio=aio)
    assert any(all(not m.parts for m in msgs) for msgs in bare)  # silent: nothing was sent
    g = wa.ClosureGuard("pydantic-ai")
    sent, _ = _pyd_run([ProcessHistory(cut), g], Script(), stored=stored, aio=aio)
    assert all(not judge.pydantic_problems(m) for m in sent)
    assert all(any(m.parts for m in msgs) for msgs in sent)
    repaired = [r for r in g.records if r.action == "guard: repaired"]
    assert repaired and all(r.restored for r in repaired)
    with pytest.raises(ClosureError, match="its call is not in the request"):
        _pyd_run([ProcessHistory(cut), wa.ClosureGuard("pydantic-ai", mode="raise")], Script(),
                 stored=stored, aio=aio)  # fmt: skip


def test_a_pydantic_ai_compaction_is_kept_as_the_system_prompt_is():
    """A response holding a provider's compaction stands for the turns it replaced: the trim keeps
    it whatever the budget, and the request keeps its parts as they were."""
    from workbench.agents.for_pydantic_ai import explode, rebuild
    from workbench.closure.logs.trim import trim_log

    msgs = [ModelResponse(parts=[CompactionPart("Earlier: ticket TCK-5520 was opened.")]),
            ModelRequest(parts=[UserPromptPart("Close the ticket. " + PAD)]),
            ModelResponse(parts=[ToolCallPart("close", {"ticket": "TCK-5520"}, tool_call_id="x")]),
            ModelRequest(parts=[ToolReturnPart("close", "closed " + PAD, tool_call_id="x")])]  # fmt: skip
    dicts, src = explode(msgs)
    assert dicts[0]["role"] == "system"
    log = logs.read(dicts, "openai")
    assert dict(log.flow("").uses[2]) == {"TCK-5520": 0}
    for budget in (30, 100, 10**6):
        t = trim_log(log, budget)
        assert 0 in t.kept
        out = rebuild(
            msgs, [dicts[i] for i in t.kept], {id(d): s for d, s in zip(dicts, src, strict=True)}
        )
        assert out[0] is msgs[0]


def test_seen_merges_as_its_rule_says():
    """`Seen.merge`: a message not seen goes after the last known one before it, before the first
    known one when none is before it, at the end when none is known; a copy read back is the
    message seen (by key); each message once."""
    from workbench.agents.for_pydantic_ai import seen_key
    from workbench.agents.history import Seen

    a, b, c, d, e = (ModelRequest(parts=[UserPromptPart(x)]) for x in "abcde")
    seen = Seen(seen_key)
    assert seen.merge([a, b]) == [a, b]
    assert seen.merge([c]) == [a, b, c]  # nothing known: what follows
    assert seen.merge([d, c]) == [a, b, d, c]  # before the first known one
    assert seen.merge([a, e]) == [a, e, b, d, c]  # after the last known one before it
    copy = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json([b, c]))
    assert copy[0] is not b and seen.merge(copy) == [a, e, b, d, c]
    assert seen.find(copy[1]) == 4


# --- no side effects, the library apart from the bench ----------------------------------------


def test_no_hook_touches_the_garbage_collector():
    """No module switches the collector off or freezes it, and a hook call leaves it as it found
    it."""
    for path in (ROOT / "workbench").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"gc\.(disable|freeze|set_threshold)|paused_gc", text), path
    before = (gc.isenabled(), gc.get_threshold())
    _pyd_run([wa.ClosureHistory(max_tokens=260)], Script(), TURNS[:2])
    assert (gc.isenabled(), gc.get_threshold()) == before


def test_the_library_imports_no_framework_it_is_not_asked_for_and_nothing_of_the_bench():
    code = ("import sys, workbench.agents.for_langchain; "
            "print(sorted(m for m in ('agents', 'pydantic_ai', 'pandas') if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    for path in (ROOT / "workbench/agents").glob("*.py"):
        assert "agents.bench" not in path.read_text(encoding="utf-8"), path

"""Reading agent logs as providers send them: orphans, roles, refusals by name, server tools,
reasoning, a person's turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main as workbench_main
from workbench.closure import logs
from workbench.closure.logs import loggen, trim
from workbench.closure.window.agent import episode_log
from workbench.closure.window.spans import CLOSURE_PATTERNS

P = loggen.REALISTIC_PATTERNS


def _fresh(conv, fmt):
    return json.loads(json.dumps(loggen.render(conv, fmt)))


@pytest.fixture(scope="module")
def convs():
    out = {n: (c, P) for n, c in loggen.HANDWRITTEN.items()}
    out["episode"] = (loggen.from_episode(episode_log(0, 60)), CLOSURE_PATTERNS)
    return out


def test_readers_agree_across_formats(convs):
    for name, (conv, pats) in convs.items():
        seen = []
        for fmt in logs.FORMATS:
            obj = _fresh(conv, fmt)
            log = logs.read(obj)  # detected
            assert log.format == fmt, name
            calls = sorted(c for m in log.messages for c, _ in m.calls)
            answers = sorted(c for m in log.messages for c in m.answers)
            defined = log.flow(pats).ids  # what later calls take from earlier messages
            assert logs.check(log, pattern=pats).closed, (name, fmt)
            seen.append((calls, answers, defined))
        assert all(x == seen[0] for x in seen), name
        assert seen[0][0] and seen[0][2], name  # calls and ids taken from results were found


@pytest.mark.parametrize(
    "fmt, mutate, where",
    [
        ("openai", lambda o: o[3].pop("tool_call_id"), "message 3: field 'tool_call_id'"),
        (
            "openai",
            lambda o: o[2]["tool_calls"][0].pop("id"),
            "message 2: field 'tool_calls[0].id'",
        ),
        (
            "anthropic",
            lambda o: o["messages"][1]["content"][0].pop("id"),
            "message 1: field 'content[0].id'",
        ),
        ("anthropic", lambda o: o["messages"][0].update(role="robot"), "message 0: field 'role'"),
        (
            "langchain",
            lambda o: o[3]["data"].pop("tool_call_id"),
            "message 3: field 'data.tool_call_id'",
        ),
    ],
)
def test_bad_log_names_message_and_field(tmp_path, capsys, fmt, mutate, where):
    obj = _fresh(loggen.HANDWRITTEN["sales_export"], fmt)
    mutate(obj)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(logs.LogError, match=where.replace("[", r"\[").replace("]", r"\]")):
        logs.load(path, fmt)
    assert workbench_main(["closure", "check", str(path), "--format", fmt]) == 2
    assert str(path) in capsys.readouterr().err


# --- the readers: orphans, roles, refusals by name, server tools, reasoning, a person ---


HELD = Path(__file__).resolve().parents[2] / "data/logs/heldout"


def test_a_front_cut_is_an_orphan_not_an_invalid_log():
    log = logs.load(HELD / "oa_front_cut.json")
    rep = logs.check(log)
    assert [c for _, c in rep.orphan_results] == ["call_parcel_7", "call_parcel_8"]
    assert "orphaned results" not in rep.lines()[0] and "results=2" in rep.lines()[0]
    for budget in (30, 60, 10**6):  # never kept: a provider rejects a result with no call
        t = trim.trim_log(log, budget)
        assert not {1, 2} & set(t.kept) and t.report.closed


def test_the_person_writing_into_a_tool_result_turn_is_kept_at_every_budget():
    body = json.loads((HELD / "an_human_in_tool_turn.json").read_text())
    older = [{"role": "user", "content": f"Earlier question {k} about the weekend rota."} if k % 2 == 0
             else {"role": "assistant", "content": f"Earlier answer {k}: Sam covers Saturday."}
             for k in range(8)]  # fmt: skip
    body["messages"] = older + body["messages"]
    log = logs.read(body)
    n = len(log.messages)
    assert log.messages[n - 1].role == "user" and log.messages[n - 1].answers == ("toolu_01Bolts",)
    need = sum(logs.approx_tokens(m) for m in log.messages[n - 3 :])
    for strategy in trim.STRATEGIES:
        for budget in range(need, need + 40, 7):
            t = trim.trim_log(log, budget, strategy=strategy)
            assert {n - 3, n - 2, n - 1} <= set(t.kept), (strategy, budget)
            assert t.report.closed and t.fits


def test_anthropic_server_tools_pair_in_their_turn_and_define_handles():
    ok = logs.load(HELD / "an_mcp_defines.json")
    assert ok.messages[1].calls[0][0] == "mcptoolu_01Lift" and logs.check(ok).closed
    bad = logs.load(HELD / "an_mcp_unanswered.json")
    assert logs.check(bad).orphan_calls == ((1, "mcptoolu_01Stair", "create_ticket"),)
    assert logs.detect(json.loads((HELD / "an_server_only.json").read_text())) == "anthropic"
    with pytest.raises(logs.LogError, match="belongs in the assistant turn"):
        logs.read([{"role": "user", "content": [
            {"type": "mcp_tool_result", "tool_use_id": "x", "content": "hi"}]}], "anthropic")  # fmt: skip


@pytest.mark.parametrize(
    "name, said",
    [
        ("bedrock_converse", "Bedrock Converse"),
        ("gemini_contents", "Gemini"),
        ("langgraph_checkpoint", "LangGraph checkpoint"),
    ],  # fmt: skip
)
def test_unread_shapes_are_refused_by_name_whatever_format_is_asked(name, said):
    obj = json.loads((HELD / f"{name}.json").read_text())
    for fmt in (None, "anthropic", "openai"):
        with pytest.raises(logs.LogError, match=f"{said}.* is not read"):
            logs.read(obj, fmt)
    msgs = obj.get("messages")  # a Bedrock message list without its body: its blocks say so
    if msgs:
        with pytest.raises(logs.LogError, match="Bedrock"):
            logs.read(msgs)


def test_chat_roles_and_calls_in_additional_kwargs_read_as_langchain_does():
    critic = logs.load(HELD / "lc_chat_critic.json")
    assert critic.messages[3].role == "chat" and logs.check(critic).closed
    old = logs.load(HELD / "lc_kwargs_calls.json")
    assert old.messages[1].calls == (("call_shelf1", "find_item"),) and logs.check(old).closed


def test_a_reasoning_item_without_its_item_is_refused_naming_it():
    with pytest.raises(logs.LogError, match="reasoning item must be followed") as e:
        logs.load(HELD / "rs_reasoning_dangling.json")
    assert e.value.index == 1
    fine = [{"role": "user", "content": "q"}, {"type": "reasoning", "id": "rs1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"}]  # fmt: skip
    assert logs.check(logs.read(fine)).closed


def test_a_budget_above_the_log_gives_it_back_unchanged():
    src = json.loads((HELD / "oa_done_side_effects.json").read_text())
    log = logs.read(src)
    t = trim.trim_log(log, 10**6)
    assert t.output == src and t.tombstones == () and t.fits
    assert not t.report.closed and t.closed  # the echoed ids stay the input's own orphans


def test_a_subclass_of_a_langchain_message_is_read_and_other_formats_refuse_objects():
    """An agent's own message class derived from LangChain's is LangChain's (read as given or
    detected); a message object in a log read as a JSON format is refused by name."""
    from langchain_core.messages import AIMessage, HumanMessage

    class Ticket(HumanMessage):  # defined here, not in langchain_core
        pass

    objs = [Ticket("restart job_7f3a"), AIMessage("done")]
    assert len(logs.read(objs, "langchain").messages) == 2
    assert logs.read(objs).format == "langchain"
    with pytest.raises(
        logs.LogError, match="message 0: a LangChain message object in a log read as openai"
    ):
        logs.read(objs, "openai")

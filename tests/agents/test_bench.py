"""The agents benchmark's pieces (notebook 11): policies, the scripted world, the judge, the
drivers through every framework, the sweep, the hooks' timings and the replay of real runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain")
pytest.importorskip("agents")
pytest.importorskip("pydantic_ai")


import workbench.agents as wa  # noqa: E402
from workbench.agents.bench import hooks, judge, policies, replay, report, runs, world  # noqa: E402
from workbench.agents.core import insert_at  # noqa: E402
from workbench.closure import logs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


# --- the benchmark's pieces -------------------------------------------------------------------


def test_policies_are_values_and_each_driver_builds_each_of_its_own():
    assert set(policies.POLICIES) == set(wa.FRAMEWORKS)
    for fw, ps in policies.POLICIES.items():
        names = [p.name for p in ps]
        assert len(names) == len(set(names)) and "closure" in names, fw
        assert all(policies.policy(fw, p.name) is p for p in ps)
        assert {p.kind for p in ps} == {"ours", "built-in", "built-in + our guard", "none"}
    with pytest.raises(ValueError, match="unknown policy"):
        policies.policy("langchain", "closure + guard")


def test_the_judge_finds_what_providers_reject():
    ok = [{"role": "user", "content": "q"},
          {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "function": {}}]},
          {"role": "tool", "tool_call_id": "a", "content": "r"}]  # fmt: skip
    assert judge.chat_problems(ok) == []
    assert judge.chat_problems(ok[2:])  # a result whose call is gone
    assert judge.chat_problems(ok[:2])  # a call never answered
    assert judge.chat_problems(ok, window=5)  # over the window
    items = [{"role": "user", "content": "q"}, {"type": "reasoning", "id": "r", "summary": []},
             {"role": "user", "content": "again"}]  # fmt: skip
    assert "reasoning" in judge.responses_problems(items)[0]
    an = [{"role": "user", "content": "q"},
          {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
          {"role": "user", "content": "x"},
          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]  # fmt: skip
    assert "after another block" in " ".join(judge.anthropic_problems({"messages": an}))
    assert judge.anthropic_problems({"messages": [an[0], an[1], an[3]]}) == []


def test_the_scripted_model_guesses_when_the_handle_is_gone_and_the_world_tells():
    w = world.World(3)
    made = json.loads(w.call("submit_job", {"task": "churn"}, 0))
    view = [world.Seen("user", "How is the churn job doing?")]
    d = world.decide(view, 3, 1)
    assert d.guessed and d.tool == "poll_job" and d.args["job_id"] != made["id"]
    d2 = world.decide([world.Seen("tool", json.dumps(made)), *view], 3, 1)
    assert not d2.guessed and d2.args["job_id"] == made["id"]


def test_a_small_sweep_through_every_framework_shows_ours_closed():
    df = runs.sweep(range(2), [600], names=["closure", "trim_messages (last)"])
    assert set(df["framework"]) == set(policies.POLICIES)
    ours = df[df["policy"] == "closure"]
    assert (ours["rejected"] == 0).all() and (ours["orphan_handles"] == 0).all()
    lc = df[(df["framework"] == "langchain") & (df["policy"] == "trim_messages (last)")]
    assert (lc["rejected_pairing"] > 0).any()  # the built-in setting that orphans a result
    again = runs.sweep(range(2), [600], names=["closure"])
    assert again.drop(columns="hook_ms").equals(ours.drop(columns="hook_ms").reset_index(drop=True))


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda: wa.ClosureMiddleware(max_tokens=0), "max_tokens must be at least 1"),
        (lambda: wa.closure_input_filter(100, strategy="oldest"), "strategy must be one of"),
        (lambda: wa.ClosureHistory(max_tokens=100, strategy="x"), "strategy must be one of"),
        (lambda: wa.ClosureGuard("pydantic-ai", mode="ignore"), "mode must be one of"),
        (lambda: wa.ClosureGuard("crewai"), "framework must be one of"),
    ],  # fmt: skip
)
def test_bad_settings_are_refused_by_name(make, said):
    with pytest.raises(ValueError, match=said):
        make()


def test_the_guards_merge_puts_each_restored_item_before_the_first_later_one():
    """`core.insert_at` (one merge pass) against the rule it states, item by item: each restored
    history item goes before the first item that came later in the history, also when an editor
    reordered or wrote items (no history position)."""
    import random

    def by_rule(at, items, adds, full):
        out = list(zip(at, items, strict=True))
        for f in adds:
            k = next((k for k, (s, _) in enumerate(out) if s is not None and s > f), len(out))
            out.insert(k, (f, full[f]))
        return [s for s, _ in out], [it for _, it in out]

    rng = random.Random(7)
    full = [f"h{i}" for i in range(40)]
    for _ in range(300):
        present = sorted(rng.sample(range(40), rng.randint(0, 25)))
        if rng.random() < 0.3:  # an editor that reorders what it keeps
            rng.shuffle(present)
        at = list(present)
        for _ in range(rng.randint(0, 3)):  # items an editor wrote (a summary)
            at.insert(rng.randint(0, len(at)), None)
        items = ["summary" if s is None else full[s] for s in at]
        adds = sorted(rng.sample(sorted(set(range(40)) - set(present)), rng.randint(0, 6)))
        assert insert_at(at, items, adds, full) == by_rule(at, items, adds, full)


def test_the_replay_of_a_history_judges_every_cut():
    """The real-run replay on a history of the project's own (the study's material lives outside
    the checkout): every cut at every share, ours and the guard with no request rejected and no
    id use orphaned, a built-in that orphans some."""
    clinic = json.loads((ROOT / "data/logs/heldout/oa_reused_ids_ferry.json").read_text())
    rows = replay.replay(clinic, "openai")
    cuts = {r["method"] for r in rows}
    assert cuts == {c.name for c in replay.CUTS}
    for r in rows:
        if r["ours"] or r["guard"]:
            assert not r["rejected"] and r["orphaned_uses"] == 0, r
    assert sum(r["orphaned_uses"] for r in rows if r["method"] == "keep last n") > 0
    s = replay.summary(__import__("pandas").DataFrame(rows).assign(format="openai"))
    assert "ours" in report.replay_note(s).lower()


def test_the_recorded_replay_is_what_the_code_records():
    """The replay notebook 11 reads: its summary is the summary of its rows, and where the real
    logs are on this machine, the rows of a log of each format come out of the code the same."""
    import pandas as pd

    results = ROOT / "data/results"
    rows = pd.read_csv(results / "agents_reallogs.csv", keep_default_na=False)
    recorded = pd.read_csv(results / "agents_reallogs_summary.csv")
    pd.testing.assert_frame_equal(replay.summary(rows), recorded, check_exact=False, atol=1e-6)
    real = ROOT.parent / "shared" / "reallogs"
    if not (real / "manifest.csv").exists():
        return
    for r in [next(m for m in replay.manifest(real) if m["format"] == f) for f in logs.FORMATS
              if f != "langchain"]:  # fmt: skip
        obj = json.loads((real / r["file"]).read_text(encoding="utf-8"))
        again = pd.DataFrame(replay.replay(obj, r["format"])).drop(columns="ms")
        was = rows[rows["log"] == r["file"]].reset_index(drop=True)
        for col in ("method", "budget", "rejected", "over_window", "orphaned_uses", "tokens_kept"):
            assert list(again[col]) == list(was[col]), (r["file"], col)


def test_each_frameworks_hooks_are_timed_in_a_process_of_its_own():
    """The hook timings: each framework's hooks in a process that imports that framework alone;
    the rows say how many calls they took and how many full collector passes ran."""
    code = ("import sys, workbench.agents.bench.hooks_pydantic_ai; "
            "print(sorted(m for m in ('agents', 'langchain') if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    from workbench.agents.bench import hooks_pydantic_ai

    rows = hooks.time_hooks(hooks_pydantic_ai.built(120, 3), 120, repeats=2, firsts=1)
    assert [r["hook"] for r in rows] == ["pydantic-ai ClosureHistory",
                                         "pydantic-ai ClosureGuard (a front cut)"]  # fmt: skip
    assert all(r["ms"] > 0 and r["first_gc_passes"] >= 0 for r in rows)


def test_hook_note_names_misses():
    import pandas as pd

    t = pd.DataFrame({"hook": ["a", "b"], "messages": [1_000, 10_000], "first_ms": [25.0, 90.0],
                      "ms": [6.0, 120.0]})  # fmt: skip
    note = report.hook_note(t)
    assert "1 of 2" in note and "- a at 1,000 messages: first call 25.0 ms" in note
    assert report.hook_note(t[t.hook == "b"]).startswith("Every hook meets its target")

"""The gate's compiled replay (workbench/closure/window/fastgate.py) against the Python manager's loop:
the same cycles, window, held spans, over-budget turns and report, byte for byte; and a manager
replayed compiled goes on span by span exactly as one replayed in Python."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from workbench.closure.window import fastgate, managers
from workbench.closure.window.agent import episode_log, long_log
from workbench.closure.window.spans import Span, load_spans

pytestmark = pytest.mark.skipif(not fastgate.available(), reason="numba is not installed")


def _state(m) -> str:
    """Everything a replay leaves that anyone reads, as one string."""
    return repr(
        (
            [c.__dict__ for c in m.cycles],
            sorted(m.retained),
            m.used,
            sorted(m.held),
            m.over_budget,
            m.report(),
            m.report().lines(),
        )
    )


def _mixed(seed: int, n: int) -> list[Span]:
    """A long log with what the generator's logs lack: pinned spans, supplied scores (ties
    among them), and tombstone-role spans."""
    out = []
    for k, s in enumerate(long_log(n, seed=seed)):
        if k % 11 == 5 and s.role == "reasoning":
            s = dataclasses.replace(s, pinned=True)
        if k % 7 == 3:
            s = dataclasses.replace(s, score=(k % 5) / 8)
        if k % 97 == 50 and s.role == "reasoning":
            s = dataclasses.replace(
                s, role="tombstone", text='{"evicted_ref": "run_1", "recoverable": true}'
            )
        out.append(s)
    return out


EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "data" / "logs").glob("*.jsonl"))

LOGS = {
    "long0": lambda: long_log(2500, seed=0),
    "long4": lambda: long_log(2500, seed=4),
    "episode3": lambda: episode_log(3, 150),
    "mixed1": lambda: _mixed(1, 2500),
}


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize(
    "capacity,kw",
    [
        (60, {}),
        (150, {"threshold": 0.1}),
        (400, {}),
        (400, {"floor": 0.2}),
        (1500, {"target": 0.9}),
    ],
)
def test_compiled_replay_is_the_python_replay(name, capacity, kw):
    log = LOGS[name]()
    py = managers.replay(log, managers.make_manager("gate", capacity, **kw), compiled_loop=False)
    fast = managers.make_manager("gate", capacity, **kw)
    assert managers.compiled(fast, log, True)
    managers.replay(log, fast, compiled_loop=True)
    assert len(py.cycles) > 0
    assert _state(fast) == _state(py)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_compiled_replay_on_the_example_span_logs(path):
    """The repository's example span logs (data/logs; one carries a judge's supplied scores and a
    pinned span), at tight and loose budgets and extreme thresholds."""
    log = load_spans(path)
    for capacity in (5, 20, 80, 400):
        for kw in ({}, {"threshold": 0.0}, {"threshold": 0.9}, {"floor": 0.5}):
            py = managers.make_manager("gate", capacity, **kw)
            fast = managers.make_manager("gate", capacity, **kw)
            managers.replay(log, py, compiled_loop=False)
            managers.replay(log, fast, compiled_loop=True)
            assert _state(fast) == _state(py), (path.name, capacity, kw)


def test_the_logs_reach_every_branch():
    """The logs above exercise what the kernel must get right: repairs, throttles, evictions as
    proposed, spans kept against the proposal, re-admissions, and windows over budget."""
    seen = set()
    for name in LOGS:
        for capacity, kw in ((60, {}), (400, {"floor": 0.2}), (1500, {"target": 0.9})):
            m = managers.replay(
                LOGS[name](), managers.make_manager("gate", capacity, **kw), compiled_loop=True
            )
            seen |= {c.decision for c in m.cycles}
            seen |= {"pinned"} if any(c.pinned for c in m.cycles) else set()
            seen |= {"over"} if m.over_budget else set()
            seen |= {"held"} if m.held else set()
    assert seen >= {"evict", "repair", "throttle", "repair+throttle", "pinned", "over", "held"}


def test_a_compiled_replay_goes_on_as_the_python_one():
    log = _mixed(2, 3000)
    head, tail = log[:1800], log[1800:]
    a = managers.replay(head, managers.make_manager("gate", 400), compiled_loop=False)
    b = managers.replay(head, managers.make_manager("gate", 400), compiled_loop=True)
    goal = next(s.text for s in log if s.role == "user")
    for m in (a, b):
        k = 0
        while k < len(tail):
            j = k
            while j < len(tail) and tail[j].turn == tail[k].turn:
                j += 1
            m.add(*tail[k:j])
            m.step(goal, tail[k].turn)
            k = j
        m.set_goal("a new goal: summarize what the audit found")  # rescoring the window
        m.step(m._goal, tail[-1].turn + 1)
    assert _state(a) == _state(b)


def test_when_the_compiled_loop_runs():
    log = long_log(200)
    gate = managers.make_manager("gate", 400)
    assert not managers.compiled(gate, log)  # short: the Python loop is cheaper
    assert managers.compiled(gate, log, True)
    assert not managers.compiled(managers.make_manager("gate", 400, mode="raise"), log, True)
    assert not managers.compiled(managers.make_manager("gate", 400, enforce=False), log, True)
    assert not managers.compiled(managers.make_manager("atomic", 400), log, True)
    assert not managers.compiled(gate, [dataclasses.replace(log[0], score=1)], True)  # an int
    long = [Span(f"s{i}", i, "reasoning", "x") for i in range(managers.COMPILED_MIN)]
    assert managers.compiled(gate, long)
    used = managers.replay(long_log(50), managers.make_manager("gate", 100))
    assert used.n == 50  # a replayed manager is no longer fresh: it goes on in Python
    assert not managers.compiled(used, log, True)


def test_a_numba_that_cannot_load_leaves_the_python_loop(monkeypatch):
    def broken():
        raise OSError("no LLVM here")

    monkeypatch.setattr(fastgate, "load", broken)
    log = long_log(600, seed=2)
    py = managers.replay(log, managers.make_manager("gate", 150), compiled_loop=False)
    m = managers.replay(log, managers.make_manager("gate", 150), compiled_loop=True)
    assert _state(m) == _state(py)

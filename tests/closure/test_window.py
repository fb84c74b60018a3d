"""Referential closure (seed 002): traces, handle analysis, edges, managers, simulator, CLI, notebook."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from workbench.cli import main as workbench_main
from workbench.closure.window import agent as agentsim
from workbench.closure.window import cycle as window
from workbench.closure.window import gate, managers, report
from workbench.closure.window import spans as closure
from workbench.closure.window.spans import ContextClosureError, Span, SpanError
from workbench.common import handles

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "data" / "logs"
EXAMPLE = LOGS / "submit_poll.jsonl"


# --- trace files ---------------------------------------------------------------------------------

GOOD = {"id": "a", "turn": 0, "role": "user", "text": "hello"}


@pytest.mark.parametrize(
    "line, field, words",
    [
        ("{not json", None, "invalid JSON"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "text"}), "text", "missing"),
        (json.dumps({**GOOD, "role": "robot"}), "role", "one of"),
        (json.dumps({**GOOD, "turn": -1}), "turn", "non-negative"),
        (json.dumps({**GOOD, "text": "  "}), "text", "non-empty"),
        (json.dumps({**GOOD, "depends_on": "b"}), "depends_on", "list"),
    ],
)
def test_bad_trace_line_names_file_line_and_field(tmp_path, line, field, words):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n")
    with pytest.raises(SpanError) as err:
        closure.load_spans(path)
    msg = str(err.value)
    assert str(path) in msg and "line 2" in msg and words in msg
    assert err.value.line == 2 and err.value.field == field
    assert isinstance(err.value, ValueError)


def test_duplicate_ids_and_time_travel_are_errors(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    with pytest.raises(SpanError, match="duplicate span id 'a'"):
        closure.load_spans(path)
    path.write_text(json.dumps({**GOOD, "turn": 3}) + "\n" + json.dumps({**GOOD, "id": "b"}) + "\n")
    with pytest.raises(SpanError, match="goes back in time"):
        closure.load_spans(path)


def test_save_and_load_round_trip(tmp_path):
    spans = closure.load_spans(EXAMPLE)
    closure.save_spans(spans, tmp_path / "copy.jsonl")
    assert closure.load_spans(tmp_path / "copy.jsonl") == spans
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


# --- handle analysis and edges -------------------------------------------------------------------


def test_default_patterns_are_the_notes():
    ref = json.loads((ROOT / "workbench" / "common" / "data" / "paper_figures.json").read_text())[
        "closure_note"
    ]
    assert handles.HANDLE_RE == ref["handle_pattern"]
    assert handles.DEFINITION_RE == ref["definition_pattern"]
    refs, defs, tombs = handles.DEFAULT_PATTERNS.scan('{"id": "run_8841", "status": "queued"}')
    assert refs == {"run_8841"} and defs == {"run_8841"} and not tombs
    refs, defs, tombs = handles.DEFAULT_PATTERNS.scan(
        '{"evicted_ref": "run_8841", "recoverable": true}'
    )
    assert tombs == {"run_8841"} and not refs and not defs  # a tombstone is not a reference
    assert handles.DEFAULT_PATTERNS.scan("poll(run_88) and xrun_8841")[0] == frozenset()


def test_window_with_evicted_binding_has_orphan_and_asymmetric_pair():
    rep = closure.analyze(closure.load_spans(LOGS / "window_orphan.jsonl"))
    assert not rep.closed
    assert rep.orphans == {"run_8841": ("k4", "c5", "c10")}
    assert ("c1", None) in rep.asymmetric  # the submit call kept, its answer gone
    assert closure.analyze(closure.load_spans(LOGS / "window_closed.jsonl")).closed


def test_kept_mask_asymmetry_and_margin():
    spans = closure.load_spans(EXAMPLE)
    kept = np.array([s.id != "r1" for s in spans])
    scores = np.linspace(1.0, 0.0, len(spans))
    rep = closure.analyze(spans, kept, scores)
    assert ("c1", "r1") in rep.asymmetric
    assert set(rep.orphans) == {"run_8841"}
    assert rep.margin == pytest.approx(scores[kept].min() - scores[~kept].max())


def test_custom_patterns_are_used():
    spans = [
        Span("a", 0, "result", '{"id": "ticket-12"}'),
        Span("b", 1, "call", "close(ticket-12)"),
    ]
    pats = handles.Patterns(r"\bticket-\d+\b", r'"id"\s*:\s*"(ticket-\d+)"')
    assert closure.analyze(spans, [False, True], patterns=pats).orphans == {"ticket-12": ("b",)}
    assert closure.analyze(spans, [False, True]).closed  # the default patterns see no handle


def test_span_edges_link_results_calls_and_references():
    edges = set(closure.span_edges(closure.load_spans(EXAMPLE)))
    assert {
        ("r1", "c1"),
        ("k4", "r1"),
        ("c5", "r1"),
        ("r5", "c5"),
        ("r5", "r1"),
        ("c10", "r1"),
        ("c8", "r7"),
        ("d2", "c2"),
    } <= edges
    assert all(d != p for d, p in edges)
    assert ("r1", "r1") not in edges  # a definition does not depend on itself


def test_result_without_explicit_link_pairs_with_latest_open_call():
    spans = [Span("c", 0, "call", "submit_job(x)"), Span("r", 0, "result", '{"id": "job_abcd"}')]
    idx = closure.SpanIndex().extend(spans)
    assert idx.pairs.tolist() == [[0, 1]] and idx.bindings.tolist() == [[0, 1]]


def _slow_components(n, links, among):
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in links:
        if among[a] and among[b]:
            parent[max(find(a), find(b))] = min(find(a), find(b))
    return [find(i) if among[i] else -1 for i in range(n)]


graphs = st.integers(2, 14).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
        st.lists(st.booleans(), min_size=n, max_size=n),
    )
)


@given(graphs)
@settings(max_examples=60, deadline=None)
def test_components_match_a_slow_union_find(g):
    """spans.components (what the atomic and tombstone managers group by) against a plain
    union-find, on random graphs and windows; edges and call/result pairs both join."""
    n, links, mask = g
    arr = np.array([(a, b) for a, b in links if a != b], dtype=np.int64).reshape(-1, 2)
    kept = np.array(mask)
    half = len(arr) // 2
    assert closure.components(n, arr[:half], arr[half:], kept).tolist() == _slow_components(
        n, arr.tolist(), kept
    )


def test_the_atomic_manager_groups_by_the_window_components():
    """The atomic manager's units are the connected components of the needs among retained
    spans (checked against the slow union-find on a simulated episode's window)."""
    m = managers.make_manager("atomic", 10**9)
    m.add(*agentsim.episode_log(0, turns=60))
    W = sorted(m.retained)
    links = [(i, p) for i in W for p in m.index.needs[i]]
    among = [i in set(W) for i in range(len(m.index.spans))]
    slow = _slow_components(len(among), links, among)
    assert m._components(W) == {i: slow[i] for i in W}
    assert len(set(m._components(W).values())) < len(W)  # some spans do share a component


# --- the relevance scorer and the managers -------------------------------------------------------


def test_bare_result_scores_low_and_call_high_naturally():
    from workbench.common.encoders import get_encoder

    enc = get_encoder("lexical")
    spans = closure.load_spans(EXAMPLE)
    sims = enc([s.text for s in spans]) @ enc([spans[0].text])[0]
    by = dict(zip([s.id for s in spans], sims, strict=True))
    assert by["r1"] < window.THRESHOLD < by["c1"]
    assert by["c10"] > window.THRESHOLD  # the later poll is what relevance keeps


def test_relevance_only_orphans_the_binding_and_the_gate_pins_it():
    spans = closure.load_spans(EXAMPLE)
    rel = managers.replay(spans, managers.make_manager("relevance", 60))
    assert "run_8841" in rel.report().orphans and rel.resolve("run_8841") == "missing"
    gate = managers.replay(spans, managers.make_manager("gate", 60))
    assert gate.report().closed and gate.resolve("run_8841") == "bound"
    assert gate.closure_tokens > 0 and any(c.pinned for c in gate.cycles)
    with pytest.raises(ContextClosureError):
        managers.replay(spans, managers.GatedManager(60, mode="raise"))


def test_dsgc_manager_propagates_over_span_edges():
    spans = closure.load_spans(EXAMPLE)
    out = {}
    for lam in (1.0, 0.0):
        m = managers.DSGCManager(10_000, lam=lam)
        m.set_goal(spans[0].text)
        m.add(*spans)
        _, out[lam] = m._propose(list(m.retained), m.target)
    r1 = m.index.pos["r1"]
    assert out[1.0][r1] / out[0.0][r1] > 1.5  # the polls' relevance flows to the bare result


def test_unknown_manager_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown manager 'fifo'"):
        managers.make_manager("fifo", 100)


def _random_trace(draw_ops, seed):
    """A trace of submits, polls, chat and reasoning whose handles are drawn from a generator."""
    rng = np.random.default_rng(seed)
    spans, handles, k = [], [], 0
    for turn, op in enumerate(draw_ops):
        k += 1
        if op == 0 or not handles:
            h = f"run_{0x8000 + 2 * k:04x}"
            handles.append(h)
            spans += [
                Span(f"c{k}", turn, "call", "submit_job(task=train the churn model)"),
                Span(
                    f"r{k}", turn, "result", json.dumps({"id": h, "status": "queued"}), (f"c{k}",)
                ),
            ]
        elif op == 1:
            h = handles[int(rng.integers(len(handles)))]
            spans += [
                Span(f"c{k}", turn, "call", f"poll({h}) for the churn model"),
                Span(
                    f"r{k}", turn, "result", json.dumps({"job": h, "status": "running"}), (f"c{k}",)
                ),
            ]
        elif op == 2:
            spans.append(Span(f"u{k}", turn, "user", "lunch is at noon if you want to join"))
        else:
            h = handles[int(rng.integers(len(handles)))]
            spans.append(Span(f"k{k}", turn, "reasoning", f"waiting on {h} for the churn model"))
    return spans


def _check_closed(m):
    """No retained reference to a handle whose definition is gone without a retained tombstone."""
    idx = sorted(m.retained)
    defined = set().union(*(m.index.defs[i] for i in idx))
    tombs = set().union(*(m.index.tombs[i] for i in idx))
    for i in idx:
        for h in m.index.refs[i]:
            assert h in defined or h in tombs, (m.name, m.index.spans[i], h)
            if h not in defined:
                assert m.resolve(h) == "recoverable" and h in m.store


@given(
    ops=st.lists(st.integers(0, 3), min_size=5, max_size=40),
    seed=st.integers(0, 10**6),
    capacity=st.integers(25, 120),
    name=st.sampled_from(["gate", "atomic", "tombstone"]),
)
@example(
    ops=[0, 1, 0, 0, 0, 0, 1], seed=0, capacity=34, name="gate"
)  # pinned a call, not its result
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_after_every_gated_cycle_the_window_is_closed(ops, seed, capacity, name):
    m = managers.make_manager(name, capacity)
    for s in _random_trace(ops, seed):
        m.add(s)
        m.step("train the churn model", s.turn)
        _check_closed(m)
        assert not m.report().orphans


@given(
    ops=st.lists(st.integers(0, 3), min_size=8, max_size=40),
    seed=st.integers(0, 10**6),
    capacity=st.integers(25, 80),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_tombstones_resolve_to_recoverable_misses_and_restore_exact_spans(ops, seed, capacity):
    m = managers.TombstoneManager(capacity)
    for s in _random_trace(ops, seed):
        before = {x.id: x for x in m.window()}
        m.add(s)
        cyc = m.step("lunch is at noon", s.turn)
        if cyc is None or not cyc.tombstoned:
            continue
        h = cyc.tombstoned[0]
        assert m.resolve(h) == "recoverable"
        evicted = set(cyc.evicted)
        restored = m.restore(h)
        assert {x.id for x in restored} <= evicted | {s.id}
        assert all(before.get(x.id, s) == x for x in restored)  # the exact spans, unchanged
        assert m.index.definer[h] in [m.index.pos[x.id] for x in restored]
        window = m.window()
        assert all(x in window for x in restored)
        assert m.resolve(h) == "bound"
        assert not any(h in m.index.tombs[m.index.pos[x.id]] for x in window)
        with pytest.raises(KeyError):
            m.restore(h)
        return
    # runs where nothing was tombstoned still had to stay within the property above


# --- the simulator and the reports ---------------------------------------------------------------


@pytest.fixture(scope="module")
def small_runs(global_seed):
    seeds = range(global_seed, global_seed + 2)
    runs = agentsim.simulate(seeds=seeds, turns=200)
    off = [
        agentsim.simulate_run(m, s, 200, enforce=False)
        for m in ("gate", "atomic", "tombstone")
        for s in seeds
    ]
    return runs + off


def test_simulation_is_deterministic(global_seed):
    a = agentsim.simulate_run("gate", global_seed, turns=80)
    b = agentsim.simulate_run("gate", global_seed, turns=80)
    assert a.timeline.equals(b.timeline) and a.cycles == b.cycles and a.counts == b.counts


def test_the_plan_agent_can_fail_under_every_manager_with_enforcement_off(small_runs):
    """The instrument sees failures: with closure enforcement switched off, each closure manager
    lets the agent make invalid calls (silent corruptions or tool errors on unknown handles)."""
    t = report.outcome_table(small_runs).to_dict("index")
    for m in ("gate-off", "atomic-off", "tombstone-off", "relevance"):
        assert t[m]["silent_total"] + t[m]["tool_errors_total"] > 0, m
        assert t[m]["evicted_binding_turns"] > 0, m  # the window itself lost bindings


def test_closure_managers_keep_bindings_and_tombstones_turn_misses_loud(small_runs):
    t = report.outcome_table(small_runs).to_dict("index")
    for m in ("gate", "atomic", "tombstone"):
        assert t[m]["evicted_binding_turns"] == 0, m  # closed after every turn
        assert t[m]["over_budget_turns"] == 0, m
    # a pinned tombstone for every evicted binding: every miss is a loud, recoverable restore
    assert t["tombstone"]["silent_total"] == 0 and t["tombstone"]["tool_errors_total"] == 0
    assert t["tombstone"]["restores_total"] > 0
    assert t["relevance"]["extra_tokens_vs_relevance"] == 0
    assert t["gate"]["closure_token_share"] > 0


def test_failures_name_handles_of_the_notes_pattern(small_runs):
    fails = report.failures(next(r for r in small_runs if r.manager == "relevance"))
    assert len(fails) and fails.call.str.contains(handles.HANDLE_RE).all()
    assert set(fails.kind) <= {"tool_error", "corrupt"}


def test_raise_mode_counts_loud_gate_errors_then_repairs(global_seed):
    thr = agentsim.simulate_run("gate", global_seed, 120)
    rai = agentsim.simulate_run("gate", global_seed, 120, mode="raise")
    assert rai.manager == "gate-raise" and rai.counts["raise_dangling"] > 0
    assert thr.counts["raise_dangling"] == thr.counts["raise_margin"] == 0
    assert rai.timeline.used.tolist() == thr.timeline.used.tolist()  # the repair is the same


def test_decision_boundary_control_natural_language_loses_nothing():
    df = report.boundary_control(range(2), turns=120)
    nl, full = df[df.log == "natural language only"], df[df.log == "full"]
    assert (nl.relevance_open_turns == 0).all() and (nl.gate_pinned_spans == 0).all()
    assert (nl.identical_evictions == 1.0).all() and (nl.cycles > 0).all()
    # the contrast: with tool calls the same condition fails
    assert (full.relevance_open_turns > 0).any() and (full.gate_pinned_spans > 0).all()


def _cycle(turn, margin, proposal=(), orphans=()):
    return window.Cycle(turn, 0, 0, (), margin, tuple(proposal), tuple(orphans))


def test_a_tombstone_store_that_misses_restores_lets_the_agent_fail(global_seed):
    """With a reliable store no tombstone run corrupts (zero by construction); a store that
    misses half the restores leaves the agent to guess, and the misses are counted."""
    ok = [agentsim.simulate_run("tombstone", s, 150) for s in range(global_seed, global_seed + 3)]
    bad = [
        agentsim.simulate_run("tombstone", s, 150, miss=0.5)
        for s in range(global_seed, global_seed + 3)
    ]
    assert all(r.counts["corrupt"] == r.counts["tool_error"] == 0 for r in ok)
    assert sum(r.counts["restore_missed"] for r in bad) > 0
    assert sum(r.counts["corrupt"] + r.counts["tool_error"] for r in bad) > 0
    assert bad[0].manager == "tombstone-miss0.5"
    assert "every restore works" in report.by_construction("tombstone")
    assert "every restore works" not in report.by_construction("tombstone-miss0.5")
    with pytest.raises(ValueError, match="restore_miss"):
        managers.make_manager("tombstone", 100, miss=1.5)


def test_ties_are_broken_as_the_notes_sort_breaks_them():
    """Two spans of equal score: the note's sorted(..., reverse=True) keeps the earlier one, so
    relevance-only evicts the later one, and the margin of that cut is an exact tie."""
    spans = [
        Span("a", 0, "user", "chatter", score=0.1),
        Span("b", 1, "user", "chatter", score=0.1),
        Span("c", 2, "user", "the goal text here", score=0.9),
    ]
    m = managers.make_manager("relevance", 10, fraction=0.5, target=0.55)
    m.add(*spans)
    cyc = m.step("goal", 2)
    assert cyc.evicted == ("b",) and cyc.margin == 0.0 and cyc.tie


def test_margin_signal_counts_ties_apart():
    cycles = [_cycle(1, 0.0), _cycle(2, 0.01), _cycle(3, 0.2, ["a"], ["a"]), _cycle(4, 0.0)]
    s = report.margin_signal(cycles)
    assert (s["flags"], s["tie_flags"], s["strict_flags"]) == (3, 2, 1)
    assert s["true_strict_flags"] == 1 and s["true_flags"] == 2


def test_margin_signal_counts_against_a_hand_computed_example():
    cycles = [
        _cycle(1, 0.01),
        _cycle(2, 0.2),
        _cycle(4, 0.3, ["a"], ["a"]),
        _cycle(5, 0.01, ["a"], ["a"]),
        _cycle(9, 0.5),
        _cycle(10, None, ["b"]),
    ]
    sig = report.margin_signal(cycles, floor=0.03)
    assert sig["flags"] == 2  # cycles 0 and 3; a cycle with no margin is not flagged
    assert sig["violations"] == 2  # "a" at cycle 2 (not again at 3: already orphaned), "b" at 5
    assert sig["true_flags"] == 2  # flag 0 -> violation at 2; flag 3 -> violation at 5
    assert sig["caught"] == 2 and sig["lead_cycles"] == [2, 2] and sig["lead_turns"] == [3, 5]
    assert sig["base_rate_cycles"] == 4  # cycles 0, 1, 3 and 4 have a violation 1-2 cycles ahead
    late = report.margin_signal(cycles, floor=0.03, horizon=1)
    assert late["true_flags"] == 0 and late["caught"] == 0  # within one cycle the flags miss


# --- the command line ----------------------------------------------------------------------------


def test_cli_check_window_reports_orphans_and_fails(capsys):
    assert workbench_main(["closure", "check", str(LOGS / "window_orphan.jsonl")]) == 1
    out = capsys.readouterr().out
    assert "orphaned reference run_8841: named by k4, c5, c10" in out
    assert "asymmetric pair: call c1 retained" in out
    assert workbench_main(["closure", "check", str(LOGS / "window_closed.jsonl")]) == 0


def test_cli_check_with_budget_and_manager_replays_the_log(capsys):
    rc = workbench_main(
        ["closure", "check", str(EXAMPLE), "--budget", "60", "--manager", "relevance"]
    )
    out = capsys.readouterr().out
    assert rc == 1 and "manager relevance, budget 60" in out and "eviction margin: " in out
    assert "orphaned reference run_8841" in out
    for m in ("gate", "atomic", "tombstone"):
        assert (
            workbench_main(["closure", "check", str(EXAMPLE), "--budget", "60", "--manager", m])
            == 0
        )


def test_cli_check_with_budget_prints_margin_and_gate_decision(capsys):
    assert workbench_main(["closure", "check", str(EXAMPLE), "--budget", "60"]) == 0
    out = capsys.readouterr().out
    assert "eviction margin: -0.0023" in out and "dangling after the proposal: run_8841" in out
    assert "gate decision: REPAIR+THROTTLE" in out and "closed" in out
    args = ["closure", "check", str(EXAMPLE), "--budget", "60", "--mode", "raise"]
    assert workbench_main(args) == 1
    assert "gate decision: RAISE: ContextClosureError" in capsys.readouterr().out


def test_cli_bad_input_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "w.jsonl"
    bad.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "id": "b", "role": "bot"}) + "\n")
    assert workbench_main(["closure", "check", str(bad)]) == 2
    assert f"{bad}: line 2: field 'role'" in capsys.readouterr().err


def test_cli_simulate_writes_summary(tmp_path, capsys):
    rc = workbench_main(
        [
            "closure",
            "simulate",
            "--seeds",
            "0:1",
            "--turns",
            "60",
            "--managers",
            "relevance,gate",
            "--out",
            str(tmp_path),
        ]
    )
    assert rc == 0 and "silent" in capsys.readouterr().out
    text = (tmp_path / "closure_summary.csv").read_text()
    assert text.startswith("manager,") and "relevance" in text and "gate" in text
    assert "simulated: workbench closure simulate --seeds 0:1" in text  # every CSV its source
    assert (tmp_path / "closure_timeline.csv").exists()


def test_python_dash_m_workbench_closure():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench",
            "closure",
            "check",
            str(LOGS / "window_orphan.jsonl"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 1 and "run_8841" in proc.stdout


# --- the notebook --------------------------------------------------------------------------------


def test_the_committed_notebook_records_what_the_issue_asks():
    """Notebook 07's stored records (nbval re-executes it and compares): every manager can fail
    with enforcement off, closure never evicts a binding, a real trimmer orphans handles."""
    from workbench.common.notebook import read_records

    rec = read_records(ROOT / "notebooks" / "07_closure.ipynb")
    o = rec["outcomes"]
    assert o["relevance"]["silent"] + o["relevance"]["tool_errors"] > 0
    assert o["relevance"]["evicted_binding_turns"] > 0 and o["relevance"]["dangling_calls"] > 0
    miss = rec["tombstone_miss"]  # a store that misses restores lets tombstones fail
    assert miss and max(miss.values()) > 0
    assert all(v > 0 for v in rec["enforcement_off_failures"].values())
    assert {m: rec["evicted_binding_turns"][m] for m in ("gate", "atomic", "tombstone")} == {
        "gate": 0,
        "atomic": 0,
        "tombstone": 0,
    }
    assert o["tombstone"]["silent"] == 0 and rec["gate_raises"]["dangling"] > 0
    assert rec["boundary_nl"] == {"identical": 1.0, "open_turns": 0, "pinned": 0}
    assert rec["extra_tokens_vs_relevance"]["relevance"] == 0.0
    assert set(rec["margin_signal"]["relevance"]) >= {
        "precision",
        "precision_no_ties",
        "tie_share",
        "base_rate",
        "lift",
    }
    logs = rec["logs"]
    assert logs["closure-safe (ours)"]["runs_with_orphans"] == 0
    fits = rec["ours_fits"]  # every trim found a closed window, or said nothing fits
    assert fits["closed_fits"] + fits["cut_to_system"] == fits["runs"]
    assert logs["langchain (documented)"]["orphan_handles"] > 0
    for name in ("closure_timeline", "closure_outcomes"):
        assert (ROOT / "figures" / f"{name}.svg").stat().st_size > 1000
    for name in ("summary", "runs", "boundary", "margin", "logs"):
        text = (ROOT / "data" / "results" / f"closure_{name}.csv").read_text()
        assert "source" in text.splitlines()[0]  # every CSV states its source
        assert "simulated" in text or "hand-written" in text


# --- the gate contract, windows with scores, budgets ---------------------------------------------


def test_gate_raises_on_dangling_before_margin():
    spans = closure.load_spans(EXAMPLE)
    d = gate.window_decision(spans, 60, mode="raise")
    assert d.margin is not None and d.margin < window.FLOOR  # both fail here ...
    assert (
        d.decision == "raise" and "orphan references ['run_8841']" in d.reason
    )  # ... dangling first
    with pytest.raises(ContextClosureError, match="orphan references"):
        managers.replay(spans, managers.GatedManager(60, mode="raise"))


def _window(tmp_path, rows):
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_window_scores_and_pins_drive_the_decision(tmp_path):
    rows = [s.to_dict() for s in closure.load_spans(EXAMPLE)]
    judge = {"r1": 0.05, "c10": 0.9, "c5": 0.8, "k4": 0.7, "u0": 0.95}
    for r in rows:
        r["score"] = judge.get(r["id"], 0.3)
    d = gate.window_decision(closure.load_spans(_window(tmp_path, rows)), 40)
    assert d.score_source == "supplied per span (score)" and "r1" in d.proposal
    assert "run_8841" in d.dangling and d.decision.startswith("repair") and d.closed
    for r in rows:
        r["pinned"] = r["id"] == "r1"
    d = gate.window_decision(closure.load_spans(_window(tmp_path, rows)), 40)
    assert "r1" not in d.proposal and d.pinned_tokens == 4 and "run_8841" not in d.dangling
    rows[3]["score"] = float("nan")
    with pytest.raises(SpanError, match="line 4: field 'score'"):
        closure.load_spans(_window(tmp_path, rows))


def test_a_repair_never_leaves_the_window_over_budget_silently():
    spans = closure.load_spans(EXAMPLE)
    pinned = [
        Span(s.id, s.turn, s.role, s.text, s.depends_on, pinned=s.role != "user") for s in spans
    ]
    d = gate.window_decision(pinned, 30)  # the pinned spans alone are over 30 tokens
    assert d.over > 0 and "OVER BUDGET" in "\n".join(d.lines())


runs_ops = st.lists(st.integers(0, 3), min_size=5, max_size=40)


@given(
    ops=runs_ops,
    seed=st.integers(0, 10**6),
    capacity=st.integers(8, 120),
    name=st.sampled_from(list(managers.MANAGERS)),
    enforce=st.booleans(),
    pin=st.integers(0, 6),
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_manager_exceeds_its_budget_silently(ops, seed, capacity, name, enforce, pin):
    trace = _random_trace(ops, seed)
    trace = [
        Span(s.id, s.turn, s.role, s.text, s.depends_on, pinned=k % 7 == pin)
        for k, s in enumerate(trace)
    ]
    m = managers.make_manager(name, capacity, enforce=enforce)
    strict = managers.make_manager(name, capacity, enforce=enforce, strict=True)
    refused = False
    for s in trace:
        m.add(s)
        m.step("train the churn model", s.turn)
        if m.used > m.capacity:  # over: recorded for this very turn
            assert m.over_budget[-1] == (s.turn, m.used - m.capacity)
        if not refused:
            strict.add(s)
            try:
                strict.step("train the churn model", s.turn)
            except window.BudgetExceeded:
                refused = True
                assert m.used > m.capacity  # refused exactly when the lenient one is over
            else:
                assert strict.used <= strict.capacity
        assert m.used == sum(m.index.cost[i] for i in m.retained)  # the running count is exact
        if name == "tombstone" and enforce:
            assert all(t in m.retained for t in m._tomb.values())  # never evicted


def test_default_definition_rule_catches_id_keys_and_adds_nothing_on_our_traces():
    pats = closure.CLOSURE_PATTERNS
    assert closure.scan(pats, "result", '{"job_id": "job_7f3a2c", "status": "queued"}')[1] == {
        "job_7f3a2c"
    }
    assert closure.scan(pats, "call", 'status({"job_id": "job_7f3a2c"})')[1] == frozenset()
    note = handles.Patterns()  # the note's rule: "id" only
    logs_ = [closure.load_spans(p) for p in sorted(LOGS.glob("*.jsonl"))]
    logs_ += [agentsim.episode_log(s, 150) for s in range(3)]
    for log in logs_:
        for s in log:
            if s.role not in ("call", "user", "system"):
                assert closure.scan(pats, s.role, s.text)[1] == note.scan(s.text)[1], s

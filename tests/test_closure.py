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

from workbench import handles
from workbench.cli import main as workbench_main
from workbench.closure import agent as agentsim
from workbench.closure import managers, report
from workbench.closure import spans as closure
from workbench.closure.spans import ContextClosureError, Span, SpanError

ROOT = Path(__file__).resolve().parents[1]
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
    ref = json.loads((ROOT / "workbench" / "data" / "paper_figures.json").read_text())[
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


def _slow_requirements(kept, edges, pairs):
    need = set(np.flatnonzero(kept))
    changed = True
    while changed:
        changed = False
        for d, p in [*edges.tolist(), *pairs.tolist()]:
            if d in need and p not in need:
                need.add(p)
                changed = True
    out = np.zeros(len(kept), dtype=bool)
    out[sorted(need)] = True
    return out & ~kept


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
def test_vectorized_graph_helpers_match_slow_loops(g):
    n, links, mask = g
    arr = np.array([(a, b) for a, b in links if a != b], dtype=np.int64).reshape(-1, 2)
    kept = np.array(mask)
    empty = np.zeros((0, 2), dtype=np.int64)
    assert np.array_equal(
        closure.closure_requirements(kept, arr, empty), _slow_requirements(kept, arr, empty)
    )
    assert closure.components(n, arr, empty, kept).tolist() == _slow_components(
        n, arr.tolist(), kept
    )


# --- the relevance scorer and the managers -------------------------------------------------------


def test_bare_result_scores_low_and_call_high_naturally():
    from workbench.encoders import get_encoder

    enc = get_encoder("lexical")
    spans = closure.load_spans(EXAMPLE)
    sims = enc([s.text for s in spans]) @ enc([spans[0].text])[0]
    by = dict(zip([s.id for s in spans], sims, strict=True))
    assert by["r1"] < managers.THRESHOLD < by["c1"]
    assert by["c10"] > managers.THRESHOLD  # the later poll is what relevance keeps


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
    m = managers.DSGCManager(10_000)
    m.add(*spans)
    q = m.encoder([spans[0].text])[0]
    _, scores, _ = m._propose(q, m._emb[: m.n] @ q, m.target)
    plain = managers.DSGCManager(10_000, lam=0.0)
    plain.add(*spans)
    _, flat, _ = plain._propose(q, plain._emb[: plain.n] @ q, plain.target)
    r1 = m.index.pos["r1"]
    assert scores[r1] / flat[r1] > 1.5  # the polls' relevance flows to the bare result


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
    idx = np.flatnonzero(m.kept)
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
    return agentsim.simulate(seeds=range(global_seed, global_seed + 2), turns=300)


def test_simulation_is_deterministic(global_seed):
    a = agentsim.simulate_run("relevance", global_seed, turns=80)
    b = agentsim.simulate_run("relevance", global_seed, turns=80)
    assert a.timeline.equals(b.timeline) and a.cycles == b.cycles


def test_relevance_only_fails_and_closure_managers_do_not(small_runs):
    s = report.summary_table(small_runs)
    assert s.loc["relevance", "invalid_calls"] + s.loc["relevance", "silent_corruptions"] > 0
    assert s.loc["relevance", "orphan_turns"] > 0
    for m in ("gate", "atomic", "tombstone"):
        assert s.loc[m, "invalid_calls"] == 0 and s.loc[m, "silent_corruptions"] == 0
        assert s.loc[m, "orphan_turns"] == 0
    assert s.loc["gate", "closure_token_share"] > 0 and s.loc["tombstone", "restores"] > 0
    assert s.loc["relevance", "extra_tokens_vs_relevance"] == 0


def test_simulated_handles_follow_the_notes_pattern(small_runs):
    fails = report.failures(next(r for r in small_runs if r.manager == "relevance"))
    assert len(fails) and fails.call.str.contains(handles.HANDLE_RE).all()
    assert set(fails.kind) <= {"invalid", "corrupt"}


def _cycle(turn, margin, proposal=(), orphans=()):
    return managers.Cycle(turn, 0, 0, (), margin, tuple(proposal), tuple(orphans))


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


def test_cli_check_with_budget_applies_the_manager(capsys):
    assert workbench_main(["closure", "check", str(EXAMPLE), "--budget", "60"]) == 1
    out = capsys.readouterr().out
    assert "manager relevance, budget 60" in out and "eviction margin: " in out
    assert "orphaned reference run_8841" in out
    assert (
        workbench_main(["closure", "check", str(EXAMPLE), "--budget", "60", "--manager", "gate"])
        == 0
    )


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
    assert rc == 0 and "invalid_per_turn" in capsys.readouterr().out
    text = (tmp_path / "closure_summary.csv").read_text()
    assert text.startswith("manager,") and "relevance" in text and "gate" in text
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


def test_notebook_runs_with_small_parameters(tmp_path):
    import papermill as pm

    from workbench.notebook import read_records

    out = tmp_path / "07_closure.ipynb"
    pm.execute_notebook(
        str(ROOT / "notebooks" / "07_closure.ipynb"),
        str(out),
        cwd=str(ROOT / "notebooks"),
        kernel_name="python3",
        progress_bar=False,
        parameters={
            "SEEDS": "0:2",
            "TURNS": 120,
            "FIGURES_DIR": str(tmp_path / "fig"),
            "RESULTS_DIR": str(tmp_path / "res"),
        },
    )
    rec = read_records(out)
    assert rec["relevance_failures"] > 0
    assert rec["gated_failures"] == {"atomic": 0, "gate": 0, "tombstone": 0}
    assert rec["gated_orphan_turns"] == {"atomic": 0.0, "gate": 0.0, "tombstone": 0.0}
    assert rec["extra_tokens_vs_relevance"]["relevance"] == 0.0
    assert set(rec["margin_signal"]["relevance"]) >= {"margin_precision", "lead_turns"}
    assert (tmp_path / "fig" / "closure_timeline.svg").exists()
    assert (tmp_path / "fig" / "closure_timeline.png").exists()
    assert (tmp_path / "res" / "closure_summary.csv").read_text().startswith("manager,")

"""`make bench`: speed figures for the targets the issues set (a benchmark, not a test).

- main suite (4 templates x 3 policies x 2 encoders x 15 seeds) end to end from a cold start,
  model load included, in a fresh process with an empty embedding cache (target <= 10 s);
- the same with a warm embedding cache (target <= 1 s);
- loading 10,000 scenarios (target: well under 1 s per 1,000);
- the explorer: the kernel's work for one change (score, rank, keep, table and both charts' rows,
  50 blocks, cached embeddings; target < 20 ms), and what a person sees: real Chromium against
  the room server's explorer page moving every control, change -> settled view, median and worst per control for both
  encoders (targets: median <= 150 ms, worst <= 300 ms; scripts/bench_explorer.py; `--lab` adds
  JupyterLab);
- the retention x selection grid, 25 cells x 300 episodes x both query forms;
- notebook 10's k-hop sweep (500 seeds x 4 templates x 2 sizes x 17 settings) on the batch engine;
- closure check (load + replay through the gate at budget 400 + report) of a 10^2..10^5-span
  tool-call log (target at 10^5: <= 5 s), the gate replay alone (target at 10^5: <= 5 s; from
  COMPILED_MIN spans it runs compiled, the first time in a process with numba's load) and the
  same 10^5 spans through the Python loop (same cycles, checked), the plain check of 10^5 spans and of 30,000 spans each
  naming a different undefined handle, one closure scan against r retained spans, and the
  closure-safe trim (relevance) of a simulated agent's OpenAI log of 458 and 4,594 messages;
- agent logs (issue 21): `closure check` and `closure trim` (both strategies, 10 % of the tokens)
  of OpenAI logs of 10^4 and 10^5 messages, load and write included (target: relevance at 10^5
  <= 15 s), and our `trim_messages` beside langchain-core's on the same 10^5 LangChain message
  objects with the same counter (langchain-core's count_tokens_approximately), strategy "last",
  at 1, 10 and 50 % of the tokens, for polls that reach far back and polls that reach a few
  rounds back (target: ours no slower);
- agent hooks (`--agents`): one call of each `workbench.agents` hook over a history of 10^3 and
  10^4 messages, each framework's hooks in a process of its own (targets: every call, first or
  next, <= 20 ms and <= 200 ms), the collector's full passes during them and the peak memory a
  call allocates per message; `closure check` and `closure trim` of each real provider log in
  `../shared/reallogs` in process (target <= 10 ms, the slowest log).

- scale: one retention step at N = 10^4, 10^5, 10^6 (d = 384, |E| = N) beside the least-work
  floor measured in the same rounds (one float32 mat-vec + one argpartition for the head; the
  scatter-add over the edges on its own line), their ratio (target at 10^6: <= 2.0) and peak
  memory (target <= 1.5x the embedding matrix); generating a large store (blocks per second);
  with `--sweep`, the calibration over 3,000 seeds in-process and on a 2-worker LocalCluster
  (same bytes; about 15 minutes); the cold
  `workbench suite main` beside the paper artifact's runner (`--reference DIR`, run in the same
  session) or beside its last measured 112.6 s, as a ratio (target <= 1/20). `--scale-csv` also rewrites data/results/scale_step.csv
  and scale_memory.csv (and, with `--sweep`, scale_sweep.csv): what notebook 09 plots, each row
  with its source, date, machine and load.

`python scripts/bench.py --sentence` also times explorer updates with the sentence encoder.
`python scripts/bench.py --scale` runs the scale figures only; `--induce` times mention induction
on one store of 10^3, 10^4 and 10^5 blocks (it must stay linear: mentions are indexed; within 50 us
a block at 10^5, memory a block alike at 10^4 and 10^5) and every question of the hand-written
conversations over one store of their turns.
`--agents` times each of our agent hooks on 10^3 and 10^4 messages and check and trim of the real
logs (`--agents-csv` rewrites data/results/agents_hooks.csv).
`python scripts/bench.py --closure` runs the closure figures only (check, replay, scan, trim), `--explorer` the explorer's,
`--room` a room of 1, 10 and 30 pages in Chromium (scripts/bench_room.py).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS: list[dict] = []

SUITE = """
import time
t0 = time.perf_counter()
from workbench.dsgc.runs import run_suite
df, summary = run_suite("main")
print("INNER", time.perf_counter() - t0, len(df))
"""


def report(name: str, seconds: float, target: float | None = None, note: str = "") -> None:
    verdict = "" if target is None else ("  PASS" if seconds <= target else "  FAIL")
    tgt = "" if target is None else f" (target <= {target:g} s)"
    print(f"{name:<62} {seconds:8.3f} s{tgt}{verdict} {note}")
    RESULTS.append(
        {
            "name": name,
            "seconds": round(seconds, 4),
            "target": target,
            "passed": None if target is None else seconds <= target,
        }
    )


def suite_in_fresh_process(cache_dir) -> tuple[float, float]:
    env = dict(os.environ, WORKBENCH_CACHE_DIR=str(cache_dir))
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", SUITE], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    wall = time.perf_counter() - t0
    inner = float(next(x for x in out.splitlines() if x.startswith("INNER")).split()[1])
    return wall, inner


def timed(fn, repeat: int = 20) -> tuple[float, float]:
    """Median and worst wall time of `fn` in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), max(times)


def bench_explorer(encoder: str = "lexical") -> None:
    """Kernel side of one explorer change: payload() (score, rank, keep, table, both charts'
    rows) on a 50-block scenario with cached embeddings. The browser-measured settle times
    (what a person sees) come from scripts/bench_explorer.py, below."""
    from workbench.dsgc.trace import Setting
    from workbench.explore.explorer import payload

    states = [
        Setting(template=t, seed=s, encoder=encoder, total_blocks=50, lam=lam)
        for t in ("role", "profile")
        for s in range(3)
        for lam in (0.5, 1.0)
    ]
    for s in states:  # warm: scenarios memoized, embeddings cached
        payload(s)
    it = iter(states * 100)
    med, worst = timed(lambda: payload(next(it)), repeat=len(states) * 3)
    report(
        f"explorer payload (kernel), 50 blocks, {encoder}, cached (median)",
        med,
        0.02,
        f"(worst {worst * 1000:.0f} ms)",
    )


def bench_explorer_browser() -> None:
    """Real Chromium against the room server's explorer page: change -> settled view per control,
    both encoders."""
    import bench_explorer

    for row in bench_explorer.run("room", reps=2):
        RESULTS.append(row)
    if "--lab" in sys.argv:
        RESULTS.extend(bench_explorer.run("lab", reps=1))


def bench_closure() -> None:
    """The closure study's speed targets (issue 14): near-linear check and replay."""
    from workbench.closure.window import managers, spans
    from workbench.closure.window.agent import long_log

    t0 = time.perf_counter()
    sum(range(10**6))
    print(f"(machine speed: sum(range(10**6)) took {1000 * (time.perf_counter() - t0):.1f} ms)")
    with tempfile.TemporaryDirectory() as d:
        for n in (100, 1_000, 10_000, 100_000):
            path = Path(d) / f"log{n}.jsonl"
            spans.save_spans(long_log(n), path)
            gate = managers.make_manager("gate", 400)
            t0 = time.perf_counter()
            log = spans.load_spans(path)
            how = "compiled" if managers.compiled(gate, log) else "Python loop"
            t1 = time.perf_counter()
            m = managers.replay(log, gate)
            t2 = time.perf_counter()
            rep = m.report()
            dt = time.perf_counter() - t0
            report(
                f"closure check --budget 400 --manager gate, {n:,} spans",
                dt,
                5.0 if n == 100_000 else None,
                f"(load {t1 - t0:.2f} s, replay {t2 - t1:.2f} s, "
                f"{'closed' if rep.closed else 'OPEN'})",
            )
            report(  # issue 21's target; the first compiled replay in a process loads numba
                f"gate replay ({how}), {n:,} spans",
                t2 - t1,
                5.0 if n == 100_000 else None,
                f"({len(m.cycles):,} cycles)",
            )
        t0 = time.perf_counter()  # the same log through the Python loop: as slow, as before
        py = managers.replay(log, managers.make_manager("gate", 400), compiled_loop=False)
        same = [c.__dict__ for c in py.cycles] == [c.__dict__ for c in m.cycles] and sorted(
            py.retained
        ) == sorted(m.retained)
        report(
            "gate replay (Python loop), 100,000 spans",
            time.perf_counter() - t0,
            None,
            f"({'the same cycles and window' if same else 'DIFFERENT cycles or window'})",
        )
        t0 = time.perf_counter()
        rep = spans.analyze(spans.load_spans(Path(d) / "log100000.jsonl"))
        report("closure check (no manager), 100,000 spans", time.perf_counter() - t0, 5.0)
        path = Path(d) / "undefined.jsonl"
        spans.save_spans(
            [spans.Span(f"c{i}", i, "call", f'poll(job="run_{i:06x}")') for i in range(30_000)],
            path,
        )
        t0 = time.perf_counter()
        rep = spans.analyze(spans.load_spans(path))
        report(
            "closure check, 30,000 spans naming 30,000 undefined handles",
            time.perf_counter() - t0,
            None,
            f"({len(rep.orphans):,} orphans)",
        )
    for r in (100, 1_000, 10_000, 100_000):
        index = spans.SpanIndex().extend(long_log(r, seed=1))
        kept = list(range(r))
        med, _ = timed(lambda: index.report(kept), repeat=5)  # noqa: B023
        report(f"one closure scan of {r:,} retained spans (median)", med)
    from workbench.closure.logs import loggen, read
    from workbench.closure.logs.trim import trim_log
    from workbench.closure.window.agent import episode_log

    for turns in (300, 3_000):  # a simulated agent's episode as an OpenAI message list
        log = read(
            json.loads(
                json.dumps(loggen.render(loggen.from_episode(episode_log(0, turns)), "openai"))
            ),
            "openai",
        )
        for budget in (4_000, 20_000):
            med, _ = timed(lambda: trim_log(log, budget, strategy="relevance"), repeat=3)  # noqa: B023
            report(
                f"closure trim --strategy relevance, {len(log.messages):,} messages to {budget:,} tokens (median)",
                med,
            )


def bench_logs() -> None:
    """Agent logs (issue 21): `closure check` and `closure trim` (both strategies) on OpenAI logs
    of 10^4 and 10^5 messages (load, work, write), and our `trim_messages` beside langchain-core's
    on the same LangChain message objects, same counter (its count_tokens_approximately), strategy
    "last", budgets of 1, 10 and 50 % of the tokens, for a log whose polls reach far back and one
    whose polls reach a few rounds back: median of 3 runs, interleaved."""
    from workbench.closure import logs
    from workbench.closure.logs import loggen, trim

    with tempfile.TemporaryDirectory() as d:
        for n in (10_000, 100_000):
            path, out = Path(d) / f"log{n}.json", Path(d) / f"trim{n}.json"
            logs.save(loggen.render(loggen.long_conversation(n), "openai"), path)
            t0 = time.perf_counter()
            log = logs.load(path)
            rep = logs.check(log)
            report(
                f"closure check, OpenAI log of {len(log.messages):,} messages",
                time.perf_counter() - t0,
                None,
                f"({'closed' if rep.closed else 'OPEN'})",
            )
            budget = sum(logs.approx_tokens(m) for m in log.messages) // 10
            for strategy in trim.STRATEGIES:
                t0 = time.perf_counter()
                t = trim.trim_log(logs.load(path), budget, strategy=strategy)
                logs.save(t.output, out)
                report(
                    f"closure trim --strategy {strategy}, {len(log.messages):,} messages, 10 %",
                    time.perf_counter() - t0,
                    15.0 if strategy == "relevance" and n == 100_000 else None,
                    f"(kept {len(t.kept):,}, {'closed' if t.report.closed else 'OPEN'})",
                )
    try:
        from langchain_core.messages import messages_from_dict
        from langchain_core.messages import trim_messages as lc_trim
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError:
        print("(langchain-core not installed: no side-by-side with trim_messages)")
        return
    from workbench.closure.logs.compare import langchain_counter

    for reach in ("uniform", "recent"):
        conv = loggen.long_conversation(100_000, reach=reach)
        msgs = messages_from_dict(json.loads(json.dumps(loggen.render(conv, "langchain"))))
        total = count_tokens_approximately(msgs)
        for frac in (0.01, 0.1, 0.5):
            budget, theirs, ours = int(total * frac), [], []
            for _ in range(3):
                t0 = time.perf_counter()
                a = lc_trim(
                    msgs,
                    max_tokens=budget,
                    strategy="last",
                    token_counter=count_tokens_approximately,
                    include_system=True,
                )
                t1 = time.perf_counter()
                b = trim.trim_messages(msgs, budget, counter=langchain_counter)
                theirs.append(t1 - t0)
                ours.append(time.perf_counter() - t1)
            them, us = statistics.median(theirs), statistics.median(ours)
            label = f"{len(msgs):,} LangChain messages, polls reach {reach}, {frac:.0%}"
            report(f"trim_messages (langchain-core), {label}", them, None, f"(kept {len(a):,})")
            report(  # the target: no slower than langchain-core's, in the same run
                f"trim_messages (ours), {label}",
                us,
                round(them, 3),
                f"(kept {len(b):,}; {us / them:.2f}x langchain-core's time)",
            )


REFERENCE_SECONDS = 112.6  # the paper artifact's runner on the main suite, last measured (issue 12)


def _arg(flag: str, default=None):
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def _timed_cli(args, env) -> tuple[float, float]:
    """(wall, CPU of the child) seconds of one command in a fresh process."""
    before = os.times()
    t0 = time.perf_counter()
    subprocess.run(args, env=env, check=True, cwd=ROOT, capture_output=True)
    wall = time.perf_counter() - t0
    after = os.times()
    return wall, (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def bench_cold(rounds: int = 3) -> None:
    """The cold `workbench suite main` (fresh process, empty embedding cache), rounds
    interleaved, with --reference DIR, with the paper artifact's runner (command from
    --reference-cmd, default `bash run_main.sh`)."""
    cli = [sys.executable, "-m", "workbench", "suite", "main"]
    ref_dir = _arg("--reference")
    runs: dict[str, list] = {"numpy": [], "reference": []}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
            env = dict(os.environ, WORKBENCH_CACHE_DIR=cache)
            runs["numpy"].append(_timed_cli([*cli, "--out", out], env))
        if ref_dir:
            cmd = _arg("--reference-cmd", "bash run_main.sh").split()
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ref_dir, check=True, capture_output=True)
            runs["reference"].append((time.perf_counter() - t0, float("nan")))
    wall = {k: statistics.median(w for w, _ in v) for k, v in runs.items() if v}
    cpu = {k: statistics.median(c for _, c in v) for k, v in runs.items() if v}
    ref = wall.get("reference", REFERENCE_SECONDS)
    where = "measured in this run" if "reference" in wall else "its last measured figure"
    report(
        "cold `workbench suite main` (numpy backend, median wall)",
        wall["numpy"],
        ref / 20,
        f"(CPU {cpu['numpy']:.1f} s; ratio to the paper runner {wall['numpy'] / ref:.3f}, "
        f"target <= 0.050; runner {ref:.1f} s, {where})",
    )


def bench_scale() -> None:
    """Retention step vs the floor, peak memory, store generation, calibration on Dask."""
    import pandas as pd

    from workbench.common.provenance import stamp
    from workbench.dsgc.calibration import regime_checks
    from workbench.scale import bigstore, layout, stepcost

    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)")
    steps, mems = [], []
    source = "make bench (scripts/bench.py --scale)"
    for n in (10_000, 100_000, 1_000_000):
        m = {**stepcost.measure(n, repeat=7), **stamp(source)}
        mem = {**stepcost.memory(n), **stamp(source)}
        steps.append(m)
        mems.append(mem)
        report(
            f"retention step, N = {n:,}, d = 384, |E| = {n:,} (median)",
            m["step_s"],
            None,
            f"(least-work floor: mat-vec + argpartition {m['floor_s']:.3f} s, ratio "
            f"{m['ratio']:.2f}"
            + (", target <= 2.0" if n == 1_000_000 else "")
            + f"; the scatter-add over |E| on its own {m['scatter_s']:.3f} s"
            + f"; peak {mem['peak_over_matrix']:.2f}x the {mem['matrix_mib']:.0f} MiB matrix,"
            f" the step's own {mem['step_extra_over_matrix']:.3f}x)",
        )
        if n == 1_000_000:
            RESULTS[-1]["passed"] = m["ratio"] <= 2.0 and mem["peak_over_matrix"] <= 1.5
    with tempfile.TemporaryDirectory() as d:
        for n in (100_000, 1_000_000):
            t0, c0 = time.perf_counter(), time.process_time()
            lay = layout.layout(n, 0)
            for a in range(0, n, bigstore.CHUNK):  # the rows in store order, chunk by chunk
                at = lay.order[a : a + bigstore.CHUNK]
                layout.lexical_rows(lay.frame[at], lay.slots[at])
            t1, c1 = time.perf_counter(), time.process_time()
            bigstore.write_store(lay, Path(d) / str(n))
            t2, c2 = time.perf_counter(), time.process_time()
            report(
                f"large store, {n:,} blocks: layout + lexical rows (wall)",
                t1 - t0,
                None,
                f"({n / (t1 - t0):,.0f} blocks/s wall; {n / (c1 - c0):,.0f} per CPU-second,"
                " target >= 100,000)",
            )
            report(
                f"large store, {n:,} blocks: JSONL + .npy written (wall)",
                t2 - t1,
                None,
                f"(end to end {n / (t2 - t0):,.0f} blocks/s wall, {n / (c2 - c0):,.0f} per CPU-s)",
            )
    sweeps = []
    for scheduler in (None, "local:2") if "--sweep" in sys.argv else ():
        t0 = time.perf_counter()
        checks = regime_checks((0, 3000), encoders=("lexical",), scheduler=scheduler)
        dt = time.perf_counter() - t0
        text = checks.to_csv(index=False)
        if scheduler is None:
            first = text
        report(
            f"calibration checks, 3,000 seeds, lexical, {scheduler or 'in-process'}",
            dt,
            None,
            "" if scheduler is None else f"(same bytes as in-process: {text == first})",
        )
        sweeps.append(
            {
                "what": "calibration checks, lexical",
                "seeds": 3000,
                "scheduler": scheduler or "in-process",
                "seconds": dt,
                "same_bytes": text == first,
                **stamp(source + " --sweep"),
            }
        )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if "--scale-csv" in sys.argv:
        from workbench.common.io import write_csv

        write_csv(pd.DataFrame(steps), ROOT / "data" / "results" / "scale_step.csv")
        write_csv(pd.DataFrame(mems), ROOT / "data" / "results" / "scale_memory.csv")
        print("wrote data/results/scale_step.csv and scale_memory.csv")
        if sweeps:
            write_csv(pd.DataFrame(sweeps), ROOT / "data" / "results" / "scale_sweep.csv")
            print("wrote data/results/scale_sweep.csv")


INDUCE_US = 50  # mention induction's budget a block at 10^5 blocks and on long conversations


def bench_induce() -> None:
    """Mention induction on one store of 10^3, 10^4 and 10^5 blocks (the large store's texts,
    one chain's query over all of it): linear when mentions are indexed, no all-pairs pass; its
    peak memory a block at 10^4 and 10^5; every question of the hand-written conversations over
    one store of their 597 turns."""
    import tracemalloc

    import numpy as np

    from workbench.beyond.conversations import read_conversations
    from workbench.beyond.induce import induce_weighted
    from workbench.dsgc.scenario import Block, Scenario
    from workbench.scale import layout

    print(f"load average: {os.getloadavg()[0]:.1f} (2 cores)")
    last = None
    for n in (1_000, 10_000, 100_000):
        lay = layout.layout(n, 0)
        texts = layout.render(lay.frame[lay.order], lay.slots[lay.order])
        _, _, frame, slots, _ = lay.queries[0]
        (query,) = layout.render(np.array([frame]), np.array([slots]))
        blocks = tuple(Block(f"b{i}", t, "filler") for i, t in enumerate(texts))
        sc = Scenario(f"store/{n}", query, blocks, (), (blocks[0].id,), "", "", 0, None, {})
        t0 = time.perf_counter()
        ((edges, _),) = induce_weighted([sc], "mentions")
        dt = time.perf_counter() - t0
        per = dt / n * 1e6
        growth = (
            f", {dt / last[1] * last[0] / n:.2f}x the per-block cost at {last[0]:,}" if last else ""
        )
        report(
            f"mention induction, one store of {n:,} blocks",
            dt,
            INDUCE_US * n / 1e6 if n == 100_000 else None,
            f"({per:.1f} us a block, {len(edges)} edges{growth})",
        )
        last = (n, dt)
        if n >= 10_000:
            tracemalloc.start()
            induce_weighted([sc], "mentions")
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            print(f"{'':<62} peak {peak / 2**20:.0f} MiB ({peak / n / 1024:.1f} KiB a block)")
    convs = read_conversations(ROOT / "data" / "conversations" / "handwritten.json").scenarios
    turns: dict[str, Block] = {}
    for sc in convs:  # the three conversations end to end: one store of their turns
        for b in sc.blocks:
            turns.setdefault(f"{sc.metadata['conversation']}/{b.id}", b)
    store = tuple(Block(k, b.text, "filler") for k, b in turns.items())
    asked = [
        Scenario(f"all/{i}", sc.query, store, (), (store[0].id,), "", "", 0, None, {})
        for i, sc in enumerate(convs)
    ]
    t0 = time.perf_counter()
    found = induce_weighted(asked, "mentions")
    dt = time.perf_counter() - t0
    n = len(asked) * len(store)
    report(
        f"mention induction, {len(asked)} questions over {len(store)} turns",
        dt,
        round(INDUCE_US * n / 1e6, 2),
        f"({dt / n * 1e6:.1f} us a block, {sum(len(e) for e, _ in found) / len(asked):.0f} "
        "edges a question)",
    )
    # prose written to load the scenario-level readers (issue 32): every block gives an alias,
    # heads a numbered clause, cites another's clause by number and names a short or full hash
    last = None
    for n in (1_000, 10_000, 100_000):
        texts = [
            f"{k // 10 + 1}.{k % 10 + 1} Vendor Person{k} (known as Nick{k}) signed commit "
            f"{k:07x}{'abcdef0123'[k % 10]}9e4d; see {(k + 7) // 10 + 1}.{(k + 7) % 10 + 1} and "
            f"Nick{(k * 31) % n}, per {k * 17 % n:07x}."
            for k in range(n)
        ]
        blocks = tuple(Block(f"b{i}", t, "filler") for i, t in enumerate(texts))
        sc = Scenario(
            f"prose/{n}", "Who signed for Nick3?", blocks, (), ("b0",), "", "", 0, None, {}
        )
        t0 = time.perf_counter()
        ((edges, _),) = induce_weighted([sc], "mentions")
        dt = time.perf_counter() - t0
        growth = (
            f", {dt / last[1] * last[0] / n:.2f}x the per-block cost at {last[0]:,}" if last else ""
        )
        report(
            f"mention induction, aliases, clauses and hashes, {n:,} blocks",
            dt,
            INDUCE_US * n / 1e6 if n == 100_000 else None,
            f"({dt / n * 1e6:.1f} us a block, {len(edges)} edges{growth})",
        )
        last = (n, dt)


def bench_agents() -> None:
    """Each of our agent hooks alone, one model call over a history of 10^3 and 10^4 messages,
    each framework's hooks in a process of its own (targets: <= 20 ms and <= 200 ms for every
    call, the first on a history and the next ones), the collector's full passes during them,
    the peak memory a call allocates per message (linear: about the same per message at both
    sizes); and `closure check` and `closure trim` of each real provider log in
    `../shared/reallogs` in process (target: <= 10 ms each, the slowest log). `--agents-csv`
    rewrites data/results/agents_hooks.csv, what notebook 11 shows."""
    import pandas as pd

    from workbench.agents.bench import hooks
    from workbench.common.provenance import stamp

    print(f"load average: {os.getloadavg()[0]:.1f} (2 cores)")
    rows = []
    for n, target in hooks.TARGET_MS.items():
        for r in hooks.hook_times(n).to_dict("records"):
            worst = max(r["first_ms"], r["ms"])
            report(f"agent hook {r['hook']}, {n:,} messages", worst / 1000, target / 1000,
                   f"(first call {r['first_ms']:.1f} ms, next {r['ms']:.1f} ms; full collector "
                   f"passes {r['first_gc_passes']} + {r['next_gc_passes']} in {r['calls']}; "
                   f"{r['peak_bytes_per_message']:,.0f} bytes a message at peak)")  # fmt: skip
            rows.append({**r, **stamp("python scripts/bench.py --agents --agents-csv")})
    bench_real_logs()
    if "--agents-csv" in sys.argv:
        from workbench.common.io import write_csv

        write_csv(pd.DataFrame(rows), ROOT / "data" / "results" / "agents_hooks.csv",
                  float_format="%.3f")  # fmt: skip
        print("wrote data/results/agents_hooks.csv")


def bench_real_logs() -> None:
    """`check` and the default `trim` (a quarter of the tokens) of each real log in process: the
    slowest of each (the median of 5 a log), against 10 ms."""
    from workbench.agents.bench import replay
    from workbench.closure import logs as L
    from workbench.closure.logs.trim import trim_log

    root = ROOT.parent / "shared" / "reallogs"
    if not root.exists():
        print(f"(no {root}: the real logs are not on this machine)")
        return
    worst = {"check": (0.0, ""), "trim": (0.0, "")}
    for r in replay.manifest(root):
        obj = json.loads((root / r["file"]).read_text(encoding="utf-8"))
        for what in worst:
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                log = L.read(obj, r["format"])
                if what == "check":
                    L.check(log)
                else:
                    trim_log(log, max(sum(map(L.approx_tokens, log.messages)) // 4, 1))
                times.append(time.perf_counter() - t0)
            ms = sorted(times)[2] * 1000
            worst[what] = max(worst[what], (ms, r["file"]))
    for what, (ms, name) in worst.items():
        report(f"closure {what} of a real log, the slowest of {len(replay.manifest(root))}",
               ms / 1000, 0.010, f"({name})")  # fmt: skip


def main() -> int:
    if "--agents" in sys.argv:
        bench_agents()
        return 0 if all(r["passed"] is not False for r in RESULTS) else 1
    if "--induce" in sys.argv:
        bench_induce()
        return 0
    if "--scale" in sys.argv:
        bench_scale()
        bench_cold()
        return 0 if all(r["passed"] is not False for r in RESULTS) else 1
    if "--closure" in sys.argv:
        bench_closure()
        bench_logs()
        return 0 if all(r["passed"] is not False for r in RESULTS) else 1
    if "--room" in sys.argv:  # a room: N = 1, 10, 30 pages at once (scripts/bench_room.py)
        import bench_room

        RESULTS.extend(bench_room.run((1, 10, 30)))
        return 0
    if "--explorer" in sys.argv:
        bench_explorer("lexical")
        bench_explorer("sentence")
        bench_explorer_browser()
        return 0 if all(r.get("passed") is not False for r in RESULTS) else 1
    with tempfile.TemporaryDirectory() as cache:
        wall, _ = suite_in_fresh_process(cache)
        report("main suite, cold start (process + model load + encode)", wall, 10.0)
        wall, inner = suite_in_fresh_process(cache)
        report("main suite, warm disk cache (fresh process, wall)", wall, None)
        report("main suite, warm disk cache (run_suite call)", inner, 1.0)

    from workbench.dsgc.runs import run_suite

    run_suite("main")
    t0 = time.perf_counter()
    run_suite("main")
    report("main suite, warm in-memory cache", time.perf_counter() - t0, 1.0)

    from workbench.dsgc.generator import TEMPLATES, generate_many
    from workbench.dsgc.scenario import load_scenarios, save_scenarios

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "10k.jsonl"
        save_scenarios(generate_many(list(TEMPLATES), range(2500)), path)
        t0 = time.perf_counter()
        n = len(load_scenarios(path))
        dt = time.perf_counter() - t0
        report(f"load {n:,} scenarios", dt, n / 1000 * 0.5, f"({dt / n * 1000:.3f} s per 1,000)")

    bench_explorer("lexical")
    bench_explorer("sentence")
    bench_explorer_browser()

    from workbench.recall import grid as recall

    recall.run_forms(episodes=300, seed=0)  # warm the sentence cache
    t0 = time.perf_counter()
    recall.run_forms(episodes=300, seed=0)
    report("recall grid, 25 cells x 300 episodes x 2 query forms", time.perf_counter() - t0)

    bench_closure()
    bench_logs()
    bench_agents()
    bench_scale()
    bench_cold()

    import bench_room  # a room: N = 1, 10, 30 pages at once (issue 18)

    RESULTS.extend(bench_room.run((1, 10, 30)))

    from workbench.beyond.studies import khop_runs, scenario_set

    scenarios = scenario_set(500, [20, 50])  # generation is timed apart: it is the generator's
    t0 = time.perf_counter()
    runs = khop_runs(scenarios, "lexical", [1, 2, 3, 4], [0.25, 0.5, 0.75, 1.0])
    report(
        f"k-hop sweep on the batch engine, {len(runs):,} runs (lexical)", time.perf_counter() - t0
    )

    out = ROOT / "data" / "results" / "bench.json"
    out.write_text(json.dumps(RESULTS, indent=1) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)} (not committed: timings belong to the machine)")
    return 0 if all(r.get("passed") is not False for r in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The cost of one retention step at large N, beside the least-work floor measured in the same run.

The floor is the least any retention step must do: one float32 matrix-vector product that reads
every row, and one argpartition for the head of the ranking (no full sort: the step never sorts
all N either). The scatter-add over the edges (one hop of propagation) is timed on its own line
beside it. Our step is the DSGC policy as the library runs it (float32 similarities, softmax,
one-hop propagation, the ranking's head and the budget walk). Timings are medians of interleaved
rounds (each round runs all three), and the ratio is the median of the per-round ratios, so a
load spike hits every side.

`python -m workbench.scale.stepcost N [D] [EDGES]` measures peak memory in a fresh process.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from workbench.dsgc.policies import PolicySetting, rank, select

BUDGET = 60  # tokens: about one chain's 2L, the budget the paper's protocol gives a query


def random_store(n: int, d: int = 384, n_edges: int | None = None, seed: int = 0):
    """(emb, q, edges, costs): unit float32 rows, a unit query, random edges, costs 5..15."""
    rng = np.random.default_rng(seed)
    emb = np.empty((n, d), dtype=np.float32)
    for a in range(0, n, 1 << 16):  # in slices: no float64 copy of the whole matrix
        block = rng.standard_normal((min(n, a + (1 << 16)) - a, d), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        emb[a : a + len(block)] = block
    q = rng.standard_normal(d).astype(np.float32)
    q /= np.linalg.norm(q)
    edges = rng.integers(0, n, size=(n if n_edges is None else n_edges, 2))
    costs = rng.integers(5, 16, size=n)
    return emb, q, edges, costs


HEAD = 256  # the head the step's partial ranking starts from (policies.rank_select_partial)


def floor_step(emb, q) -> np.ndarray:
    """The least work: one float32 mat-vec reading every row, one argpartition for the head."""
    sims = emb @ q
    return np.argpartition(-sims, HEAD)[:HEAD]


def scatter_step(sims, edges) -> np.ndarray:
    """One scatter-add over the edges: what one hop of propagation costs, timed on its own."""
    return np.bincount(edges[:, 1], weights=sims[edges[:, 0]], minlength=len(sims))


def our_step(emb, q, edges, costs, budget: int = BUDGET):
    """One DSGC retention step as the library runs it."""
    return PolicySetting()(emb, q, edges, costs, budget)


def measure(n: int, d: int = 384, n_edges: int | None = None, repeat: int = 5, seed: int = 0):
    """Median seconds of our step and of the floor (interleaved rounds), and the median ratio.
    Checks first that the step keeps exactly what the full sort keeps."""
    emb, q, edges, costs = random_store(n, d, n_edges, seed)
    ret = our_step(emb, q, edges, costs)
    full = rank(ret.scores, ret.sims)
    if not np.array_equal(ret.kept, select(full, costs, BUDGET)):
        raise AssertionError("the partial step kept another set than the full sort")
    sims = (emb @ q).astype(np.float64)
    ours, floor, scatter = [], [], []
    for _ in range(repeat):
        t = time.perf_counter()
        floor_step(emb, q)
        floor.append(time.perf_counter() - t)
        t = time.perf_counter()
        scatter_step(sims, edges)
        scatter.append(time.perf_counter() - t)
        t = time.perf_counter()
        our_step(emb, q, edges, costs)
        ours.append(time.perf_counter() - t)
    return {
        "blocks": n,
        "dim": d,
        "edges": len(edges),
        "step_s": statistics.median(ours),
        "floor_s": statistics.median(floor),
        "scatter_s": statistics.median(scatter),
        "ratio": statistics.median(o / f for o, f in zip(ours, floor, strict=True)),
        "head": len(ret.head),
        "repeat": repeat,
    }


def _vm(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def memory_here(n: int, d: int = 384, n_edges: int | None = None) -> dict:
    """In this process: the step's peak resident memory over the embedding matrix (Linux
    VmHWM, reset just before the step) and the step's own allocations (tracemalloc)."""
    emb, q, edges, costs = random_store(n, d, n_edges)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset VmHWM to the current resident set
    before = _vm("VmRSS")
    tracemalloc.start()
    our_step(emb, q, edges, costs)
    _, extra = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    peak = _vm("VmHWM")
    return {
        "blocks": n,
        "matrix_mib": emb.nbytes / 2**20,
        "peak_mib": peak / 2**20,
        "peak_over_matrix": peak / emb.nbytes,
        "step_extra_mib": extra / 2**20,
        "step_extra_over_matrix": extra / emb.nbytes,
        "rss_before_mib": before / 2**20,
    }


def memory(n: int, d: int = 384, n_edges: int | None = None) -> dict:
    """memory_here in a fresh Python process (so nothing else sets the high-water mark)."""
    args = [sys.executable, "-m", "workbench.scale.stepcost", str(n), str(d), str(n_edges or n)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(memory_here(*(int(a) for a in sys.argv[1:4]))))

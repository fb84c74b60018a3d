"""Benchmarks people ask about. `make bench` runs this.

explorer: one explorer update (scenario -> encode via cache -> score -> rank -> keep -> table,
landscape, valley, verdict) for a 50-block scenario once its embeddings are cached; the budget is
100 ms. Also reported: the widget's full refresh, which adds rendering both charts to SVG.
"""

from __future__ import annotations

import statistics
import sys
import time

from workbench.explorer import State, chart_svg, update

BUDGET_MS = 100.0


def timed(fn, repeat: int = 20) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), max(times)


def bench_explorer(encoder: str = "lexical") -> float:
    states = [
        State(template=t, seed=s, encoder=encoder, total_blocks=50, lam=lam)
        for t in ("role", "profile")
        for s in range(3)
        for lam in (0.5, 1.0)
    ]
    for s in states:  # warm: scenarios memoized, embeddings cached
        update(s)
    it = iter(states * 100)
    med, worst = timed(lambda: update(next(it)), repeat=len(states))
    print(
        f"explorer update, 50 blocks, {encoder:8s}: median {med:6.1f} ms, max {worst:6.1f} ms "
        f"(budget {BUDGET_MS:.0f} ms)"
    )

    def refresh():
        _, land, val, _ = update(next(it))
        chart_svg(land), chart_svg(val)

    med_r, worst_r = timed(refresh, repeat=6)
    print(f"widget refresh incl. 2 SVG renders  : median {med_r:6.1f} ms, max {worst_r:6.1f} ms")
    return med


def main() -> int:
    med = bench_explorer("lexical")
    if "--sentence" in sys.argv:
        bench_explorer("sentence")
    if med > BUDGET_MS:
        print(f"FAIL: explorer update median {med:.1f} ms exceeds {BUDGET_MS:.0f} ms")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

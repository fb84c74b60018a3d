"""A room as an instructor opens it: `make app`'s room (seats, token; `--pool K` preheated
kernels a notebook, default none) started and left to settle (its pools, if any, filled and
idle), then N pages arriving within a few seconds in one headless Chromium (each page its own
browser context, 1280x720), half explorers and half workshops. Every explorer page moves its
controls in the same rounds; every workshop page reveals its four parts. `make bench
ARGS=--room` runs N = 1, 10 and 30 (scripts/bench.py); alone: python scripts/bench_room.py
[N ...] [--pool K] [--nice] (--nice: the browsers at the lowest CPU priority, standing in
for the participants' own laptops); --solo: one page at a time, what a page costs its browser
(`solo`).

Timed in the page (performance.now(), from the navigation's start): first view (the explorer's
live view answered, or the workshop's fourth part shown); change (input event -> last paint of
the settled view, as scripts/bench_explorer.py times it) and the server's own answer time for it
(the kernel's compute, which the page reports); reveal (click -> the answer line shown). Also
the peak memory of the server and its kernels (RSS, sampled every 0.5 s), failed pages (not
ready in time, or "model not found", or a wrong verdict), requests off the machine, console
errors, and the load average beside each figure. The N browsers share the machine's two cores
with the server here; in a room they run on the participants' laptops.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_explorer  # noqa: E402  (its probe, moves and settle rule)

READY = r"""
(() => {
  const mark = () => {
    if (window.__ready) return;
    const ex = document.querySelector('.wbx[data-wb-seq] .wb-verdict-text');
    const ws = document.querySelector('.wb-part-4 .wb-reveal');
    if (ex || ws) window.__ready = performance.now();
  };
  window.__reveal = {};
  document.addEventListener('click', e => {
    const part = e.target.closest && e.target.closest('.wb-part');
    if (part && e.target.closest('.wb-reveal')) window.__reveal[part.className] = {t0: performance.now()};
  }, true);
  const obs = new MutationObserver(() => {
    mark();
    for (const [cls, r] of Object.entries(window.__reveal)) {
      if (r.done) continue;
      const el = document.getElementsByClassName(cls.split(' ').find(c => /^wb-part-\d$/.test(c)))[0];
      if (el && el.querySelector('.wb-compare-line')) r.done = performance.now();
    }
  });
  const go = () => obs.observe(document.documentElement, {subtree: true, childList: true, attributes: true});
  if (document.documentElement) go(); else document.addEventListener('DOMContentLoaded', go);
})();
"""
ARRIVAL_S = 5.0  # the pages arrive within this many seconds
READY_S = 300  # a page not ready this long after the room arrived has failed (one deadline)


def _tree(root: int) -> list[Path]:
    """/proc entries of a process and all its descendants (kernels run in their own sessions,
    so a process group would miss them)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(Path("/proc") / str(pid))
        todo.extend(c for c, pp in parent.items() if pp == pid)
    return out


def _rss(root: int) -> int:
    total = 0
    for d in _tree(root):
        try:
            for line in (d / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
    return total


def _cpu(root: int) -> float:
    """CPU seconds used so far by a process tree."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for d in _tree(root):
        try:
            f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
        except (OSError, ValueError, IndexError):
            continue
    return total / tick


def _quiet(root: int, window: float = 3.0, limit: float = 0.3, timeout: float = 900) -> float:
    """Wait until the tree used less than `limit` CPU seconds in `window` (the pools have run
    their notebooks); returns the seconds waited."""
    t0 = time.monotonic()
    last = _cpu(root)
    while time.monotonic() - t0 < timeout:
        time.sleep(window)
        now = _cpu(root)
        if now - last < limit:
            break
        last = now
    return time.monotonic() - t0


class Peak(threading.Thread):
    """Peak RSS of a process tree, sampled every 0.5 s."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.peak, self.stop = root, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, _rss(self.root))
            self.stop.wait(0.5)


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def _server_pid(folder) -> int:
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            cmd = p.read_bytes()
        except OSError:
            continue
        if str(folder).encode() in cmd and b"voila" in cmd:
            return int(p.parent.name)
    raise RuntimeError("no voila process for the room")


def _browser(nice: bool) -> str:
    """Chromium's path; with `nice`, a wrapper that runs it at the lowest CPU priority: the N
    browsers then take only what the server and its kernels leave (in a room they run on the
    participants' own laptops, and the server has its machine to itself)."""
    if not nice:
        return "/usr/bin/chromium"
    wrapper = Path(tempfile.mkdtemp(prefix="wb-nice-")) / "chromium"
    wrapper.write_text('#!/bin/sh\nexec nice -n 19 /usr/bin/chromium "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def room(n: int, rounds: int = 6, pool: int | None = None, nice: bool = False) -> dict:
    """Open n pages in a room of max(n, 2) seats (`pool` preheated kernels a notebook, default
    the room's; `nice`: the browsers at the lowest CPU priority); returns the figures."""
    from playwright.sync_api import sync_playwright

    from workbench.explore import app
    from workbench.explore.explorer import payload

    def stage(what):
        print(f"  [{time.strftime('%H:%M:%S')}] {n} page(s): {what}", file=sys.stderr, flush=True)

    start, steps = bench_explorer.plan()
    steps = [s for s in steps if s[0] == "lexical" and s[1] == 20][:rounds]
    verdicts = [payload(s)["verdict"] for *_, s in steps]
    payload(start)
    token = "bench-room"
    seats = max(n, 2)
    folder = app.room_folder()
    log = Path(folder).parent / f"{Path(folder).name}-voila.log"
    pool = app.room_pool(seats, pool)  # a room's default (a LAN address), though served locally
    command = partial(app.room_command, ip="127.0.0.1", token=token, seats=seats, pool=pool)
    env = dict(os.environ, WORKBENCH_WARM="0")
    out: dict = {"n": n, "seats": seats, "pool": pool, "nice": nice}
    with app.serve(folder, env=env, log=log, command=command, timeout=300) as base:
        t0 = time.monotonic()
        while pool and log.read_text().count(f"is filled with {pool} kernel") < 2:
            if time.monotonic() - t0 > 600:
                raise RuntimeError("the pools did not fill in 10 minutes")
            time.sleep(1)
        server = _server_pid(folder)
        stage("server up; waiting for it to settle")
        _quiet(server)
        stage("settled; pages arrive")  # the pooled kernels have executed their notebooks
        out["pools_filled_s"] = time.monotonic() - t0
        out["idle_gb"] = _rss(server) / 1e9
        peak = Peak(server)
        peak.start()
        links = app.room_links("127.0.0.1", int(base.rsplit(":", 1)[1].strip("/")), token)
        kinds = ["explorer" if k % 2 == 0 else "workshop" for k in range(n)]
        load_before = os.getloadavg()[0]
        cpu0 = (_cpu(server), _cpu(os.getpid()))
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=_browser(nice), args=app.CHROMIUM_ARGS, headless=True
            )
            ctxs, pages, recs = [], [], []
            for _ in kinds:
                ctx = browser.new_context(viewport={"width": 1280, "height": 720})
                ctx.add_init_script(bench_explorer.PROBE)
                ctx.add_init_script(READY)
                recs.append(app.Recorder(ctx))
                ctxs.append(ctx)
                pages.append(ctx.new_page())
            gap = ARRIVAL_S / max(n - 1, 1)
            for page, kind in zip(pages, kinds, strict=True):
                page.goto(links[kind], wait_until="commit", timeout=READY_S * 1000)
                time.sleep(gap if n > 1 else 0)
            first, failed = [], []
            deadline = time.monotonic() + READY_S  # shared: a failed page does not add its wait
            for k, page in enumerate(pages):
                try:
                    left = max(deadline - time.monotonic(), 0.1)
                    page.wait_for_function("() => !!window.__ready", timeout=left * 1000)
                    first.append(page.evaluate("() => window.__ready") / 1000)
                    if "model not found" in page.inner_text("body").lower():
                        failed.append((k, "model not found"))
                except Exception as e:  # noqa: BLE001  (a page that never got ready failed)
                    failed.append((k, f"not ready: {type(e).__name__}"))
            out["load_first_view"] = os.getloadavg()[0]
            srv, every = _cpu(server) - cpu0[0], _cpu(os.getpid()) - cpu0[1]
            out["cpu_first_view"] = (srv, every - srv)  # (server and kernels, the browsers)
            by_kind = {
                kind: sorted(round(f, 1) for f, k in zip(first, kinds, strict=False) if k == kind)
                for kind in ("explorer", "workshop")
            }
            stage(
                f"first views by page: {by_kind}; CPU s until then: server and kernels "
                f"{srv:.0f}, browsers {every - srv:.0f}"
            )
            stage(
                f"first views done ({len(failed)} failed: {failed[:4]}); p50 {_pct(first, 0.5):.1f} s,"
                f" p95 {_pct(first, 0.95):.1f} s, max {max(first, default=float('nan')):.1f} s; "
                "moving the explorers"
            )
            change, server = [], []
            bad = {k for k, _ in failed}
            if bad and os.environ.get("WORKBENCH_SCREENSHOTS"):
                for k in sorted(bad):
                    pages[k].screenshot(
                        path=f"{os.environ['WORKBENCH_SCREENSHOTS']}/room_{n}_{k}.png"
                    )
            alive = [k not in bad for k in range(n)]
            explorers = [
                p for p, k, a in zip(pages, kinds, alive, strict=True) if k == "explorer" and a
            ]
            answered = []
            for k, page in enumerate(explorers):  # a page that lost its answer is a failed page
                try:
                    page.wait_for_function(
                        bench_explorer.ANSWERED, arg=payload(start)["verdict"], timeout=60_000
                    )
                    answered.append(page)
                except Exception as e:  # noqa: BLE001
                    failed.append((2 * k, f"no answer: {type(e).__name__}"))
            explorers = answered
            for (_, _, _label, how, _s), verdict in zip(steps, verdicts, strict=True):
                for k, page in enumerate(explorers):  # every explorer moves in the same round
                    try:
                        bench_explorer.move(page, how)
                    except Exception as e:  # noqa: BLE001
                        failed.append((2 * k, f"move: {type(e).__name__}"))
                for k, page in enumerate(explorers):
                    try:
                        change.append(bench_explorer.settle(page, verdict))
                        server.append(page.evaluate(bench_explorer.PARTS)["kernel compute"])
                    except Exception as e:  # noqa: BLE001
                        failed.append((2 * k, f"change: {type(e).__name__}"))
            out["load_change"] = os.getloadavg()[0]
            stage("changes done; revealing the workshops")
            reveal = []
            workshops = [
                p for p, k, a in zip(pages, kinds, alive, strict=True) if k == "workshop" and a
            ]
            for part in "1234":
                for k, page in enumerate(workshops):
                    try:
                        page.select_option(
                            f".wb-part-{part} .wb-predict select", index=1, timeout=10_000
                        )
                        page.click(f".wb-part-{part} button.wb-reveal", timeout=10_000)
                    except Exception as e:  # noqa: BLE001
                        failed.append((2 * k + 1, f"part {part} missing: {type(e).__name__}"))
                for k, page in enumerate(workshops):
                    try:
                        page.wait_for_selector(f".wb-part-{part} .wb-compare-line", timeout=60_000)
                        page.wait_for_timeout(20)
                        r = page.evaluate(
                            "p => Object.entries(window.__reveal).find(([c]) => c.includes('wb-part-' + p))[1]",
                            part,
                        )
                        reveal.append(r["done"] - r["t0"])
                    except Exception as e:  # noqa: BLE001
                        failed.append((2 * k + 1, f"reveal {part}: {type(e).__name__}"))
            out["load_reveal"] = os.getloadavg()[0]
            out["offsite"] = sum(len(r.offsite()) for r in recs)
            out["console_errors"] = sum(len(r.errors) for r in recs)
            out["errors"] = [e for r in recs for e in r.errors][:6]
            for ctx in ctxs:
                ctx.close()
            browser.close()
        out["peak_gb"] = peak.peak / 1e9
        peak.stop.set()
        out["load_before"] = load_before
        out.update(first=first, change=change, server=server, reveal=reveal, failed=failed)
    return out


def print_room(r: dict) -> list[dict]:
    f, c, s, v = r["first"], r["change"], r["server"], r["reveal"]
    print(
        f"\nroom, {r['n']} page(s) arriving within {ARRIVAL_S:g} s ({r['seats']} seats, "
        f"{r['pool']} preheated kernel(s) a notebook, "
        f"{'browsers at nice 19, ' if r.get('nice') else ''}ready in {r['pools_filled_s']:.0f} s before "
        "anyone arrived; load average "
        f"{r['load_before']:.1f} before)"
    )
    print(
        f"  first view      p50 {_pct(f, 0.5):5.1f} s  p95 {_pct(f, 0.95):5.1f} s  max "
        f"{max(f, default=float('nan')):5.1f} s   (load {r['load_first_view']:.1f}; CPU s until "
        f"then: server and kernels {r['cpu_first_view'][0]:.0f}, browsers "
        f"{r['cpu_first_view'][1]:.0f})"
    )
    print(
        f"  change, page    p50 {_pct(c, 0.5):5.0f} ms p95 {_pct(c, 0.95):5.0f} ms max "
        f"{max(c, default=float('nan')):5.0f} ms  (n={len(c)}, load {r['load_change']:.1f})"
    )
    print(
        f"  change, server  p50 {_pct(s, 0.5):5.0f} ms p95 {_pct(s, 0.95):5.0f} ms max "
        f"{max(s, default=float('nan')):5.0f} ms"
    )
    print(
        f"  reveal          p50 {_pct(v, 0.5):5.0f} ms p95 {_pct(v, 0.95):5.0f} ms max "
        f"{max(v, default=float('nan')):5.0f} ms  (n={len(v)}, load {r['load_reveal']:.1f})"
    )
    print(
        f"  memory (server + kernels): {r['idle_gb']:.1f} GB with the pools ready, peak "
        f"{r['peak_gb']:.1f} GB; failed pages "
        f"{len({k for k, _ in r['failed']})} {r['failed'][:4]}; requests off the machine "
        f"{r['offsite']}; console errors {r['console_errors']}"
    )
    for e in r.get("errors", [])[:4]:
        print(f"    console: {str(e)[:160]}")
    return [
        {
            "name": f"room {r['n']} pages",
            "first_p95_s": round(_pct(f, 0.95), 2),
            "change_p95_ms": round(_pct(c, 0.95), 1),
            "server_p95_ms": round(_pct(s, 0.95), 1),
            "reveal_p95_ms": round(_pct(v, 0.95), 1),
            "peak_gb": round(r["peak_gb"], 2),
            "failed": len({k for k, _ in r["failed"]}),
        }
    ]


def solo(kinds=("explorer", "workshop", "explorer", "workshop")) -> list[dict]:
    """What one page costs its browser, alone (a room's floor): pages opened one after another
    against a preheated room of two seats, each in a fresh browser context after the one before
    closed; per page the first view, the browser's CPU seconds until then (every Chromium
    process; the server's own subtracted), the page's main-thread task and script seconds
    (Chrome's Performance metrics), its requests and bytes, and its CPU in the next 10 s idle."""
    from playwright.sync_api import sync_playwright

    from workbench.explore import app

    folder = app.room_folder()
    log = Path(folder).parent / f"{Path(folder).name}-voila.log"
    command = partial(app.room_command, ip="127.0.0.1", token="solo", seats=2, pool=1)
    env = dict(os.environ, WORKBENCH_WARM="0")
    rows = []
    with app.serve(folder, env=env, log=log, command=command, timeout=300) as base:
        t0 = time.monotonic()
        while log.read_text().count("is filled with 1 kernel") < 2:
            if time.monotonic() - t0 > 600:
                raise RuntimeError("the pools did not fill in 10 minutes")
            time.sleep(1)
        server = _server_pid(folder)
        _quiet(server)
        links = app.room_links("127.0.0.1", int(base.rsplit(":", 1)[1].strip("/")), "solo")

        def browser_cpu() -> float:
            return _cpu(os.getpid()) - _cpu(server)

        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium", args=app.CHROMIUM_ARGS, headless=True
            )
            for kind in kinds:
                _quiet(server)  # the pool refilled after the page before
                ctx = browser.new_context(viewport={"width": 1280, "height": 720})
                ctx.add_init_script(READY)
                page = ctx.new_page()
                cdp = ctx.new_cdp_session(page)
                cdp.send("Performance.enable")
                done = []
                page.on("requestfinished", lambda r, done=done: done.append(r))
                c0 = browser_cpu()
                page.goto(links[kind], wait_until="commit")
                page.wait_for_function("() => !!window.__ready", timeout=READY_S * 1000)
                ready = page.evaluate("() => window.__ready") / 1000
                c1 = browser_cpu()
                m = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
                time.sleep(10)
                idle = browser_cpu() - c1
                size = 0
                for r in done:
                    try:
                        size += r.sizes()["responseBodySize"]
                    except Exception:  # noqa: BLE001  (a request without a body)
                        pass
                row = {
                    "kind": kind,
                    "first_s": round(ready, 2),
                    "browser_cpu_s": round(c1 - c0, 2),
                    "task_s": round(m.get("TaskDuration", float("nan")), 2),
                    "script_s": round(m.get("ScriptDuration", float("nan")), 2),
                    "requests": len(done),
                    "mb": round(size / 1e6, 2),
                    "idle_cpu_s_per_10s": round(idle, 2),
                }
                print(
                    f"  {kind:<9} first view {ready:5.1f} s; browser CPU {c1 - c0:4.1f} s (main "
                    f"thread {row['task_s']:.2f} s, script {row['script_s']:.2f} s); "
                    f"{len(done)} requests, {row['mb']:.1f} MB; idle next 10 s: {idle:.2f} CPU s",
                    flush=True,
                )
                rows.append(row)
                ctx.close()
            browser.close()
    return rows


def run(sizes=(1, 10, 30), pool: int | None = None, nice: bool = False) -> list[dict]:
    rows = []
    for n in sizes:
        rows += print_room(room(n, pool=pool, nice=nice))
    return rows


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--solo" in args:  # one page at a time: what a page costs its browser
        solo()
        sys.exit(0)
    pool = int(args[args.index("--pool") + 1]) if "--pool" in args else None
    if "--pool" in args:
        del args[args.index("--pool") : args.index("--pool") + 2]
    nice = "--nice" in args
    args = [a for a in args if a != "--nice"]
    run([int(a) for a in args] or [1, 10, 30], pool, nice)

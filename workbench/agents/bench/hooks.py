"""Each of our hooks alone, on a long history (`make bench ARGS=--agents`): the generated long
conversation of about N messages in the hook's framework's shape, a budget a tenth of its tokens,
the hook called as its framework calls it (a LangChain hook on a LangGraph thread, pydantic-ai's
in a conversation, the async ones awaited on one event loop that runs on). Each framework's hooks
are timed in a process of their own (`hooks_langchain`, `hooks_openai_agents`,
`hooks_pydantic_ai`), which imports that framework alone and holds that history alone, as an
agent's process does. Per hook: its first call (a new adapter), its next calls (each on the
history grown by one round since the call before, as a running agent's is), the full passes of
the garbage collector those calls set off (counted, not changed) and the peak memory a call
allocates per message."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import json
import subprocess
import sys
import time
import tracemalloc
import weakref

import pandas as pd

from workbench.agents.core import tokens
from workbench.closure.logs import loggen, read

# the targets for one hook call, first or next: 20 ms at 10^3 messages, 200 ms at 10^4
TARGET_MS = {1_000: 20.0, 10_000: 200.0}
ROUND = 7  # conversation entries of one round of the long conversation (`loggen`)
FRAMEWORK_MODULES = ("hooks_langchain", "hooks_openai_agents", "hooks_pydantic_ai")


def run_sync(coro):
    """Run a coroutine to the end, also where an event loop already runs (a notebook's kernel):
    then on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def awaiter():
    """A function awaiting coroutines on one event loop of its own, kept while the function is, as
    a framework awaits its hooks: inside a loop that runs on, not a new one per call
    (`asyncio.run`, which on Python 3.11 also formats the repr of what the coroutine returned
    when it puts the SIGINT handler back: ~10 ms for a request of 10^4 items, the bench's cost,
    not the hook's). Where a loop already runs (a notebook's kernel): `run_sync`."""
    loop = asyncio.new_event_loop()

    def run(coro):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return loop.run_until_complete(coro)
        return run_sync(coro)

    weakref.finalize(run, loop.close)
    return run


class Conversation:
    """The generated long conversation of about `n_messages` messages and `rounds` more rounds:
    `slice(render, k)`, its first messages in a framework's shape after k more rounds, and the
    budget, a tenth of its tokens."""

    def __init__(self, n_messages: int, rounds: int):
        base = loggen.long_conversation(n_messages)
        self.conv = loggen.long_conversation(n_messages + ROUND * rounds)  # `rounds` longer
        self.ends = [len(base) + ROUND * k for k in range(rounds + 1)]
        assert self.conv[: len(base)] == base and len(self.conv) == self.ends[-1]
        self.rounds = rounds
        self.budget = max(tokens(read(loggen.to_openai(base), "openai")) // 10, 100)

    def lengths(self, render) -> list[int]:
        """How many items `render` makes of the conversation after each round."""
        return [len(render(self.conv[:e])) for e in self.ends]


class State:
    """One hook on one history: `k` rounds grown so far."""

    def __init__(self, hook, rounds: int):
        self.hook, self.k, self.rounds = hook, 0, rounds

    def grow(self) -> None:
        self.k += 1
        if self.k > self.rounds:
            raise ValueError(f"the bench grows a history at most {self.rounds} rounds")


def time_hooks(built: dict, n_messages: int, repeats: int, firsts: int) -> list[dict]:
    """Time each hook of `built` (name -> a function giving (setup, grow, one call)): the median
    of `firsts` first calls (each by a new adapter), of `repeats` next calls, how many full
    collector passes ran during them, the peak memory a call allocates per message."""
    passes = [0]

    def count(phase, info):
        if phase == "start" and info["generation"] == 2:
            passes[0] += 1

    rows = []
    gc.callbacks.append(count)
    try:
        for name, build in built.items():
            setup, grow, call = build()
            gc.collect()  # (each hook starts on a collected heap; the collector stays as it is)
            passes[0], cold = 0, []
            for _ in range(firsts):
                state = setup()
                t0 = time.perf_counter()
                call(state)
                cold.append(time.perf_counter() - t0)
            first_passes, times = passes[0], []
            for _ in range(repeats):
                grow(state)
                t0 = time.perf_counter()
                call(state)
                times.append(time.perf_counter() - t0)
            next_passes = passes[0] - first_passes
            grow(state)
            tracemalloc.start()
            call(state)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            cold.sort()
            times.sort()
            rows.append({"hook": name, "messages": n_messages,
                         "first_ms": 1000 * cold[len(cold) // 2],
                         "ms": 1000 * times[len(times) // 2],
                         "first_gc_passes": first_passes, "next_gc_passes": next_passes,
                         "calls": f"{firsts} first, {repeats} next",
                         "peak_bytes_per_message": peak / n_messages})  # fmt: skip
            del setup, grow, call, state
    finally:
        gc.callbacks.remove(count)
    return rows


def main(built_of, argv: list[str]) -> None:
    """A framework's hook module run as a program: `N REPEATS FIRSTS` -> its rows as JSON."""
    n, repeats, firsts = map(int, argv)
    print(json.dumps(time_hooks(built_of(n, repeats + 1), n, repeats, firsts)))


def hook_times(n_messages: int, repeats: int = 11, firsts: int = 5) -> pd.DataFrame:
    """Every hook's times at `n_messages`, each framework's in a process of its own."""
    rows = []
    for mod in FRAMEWORK_MODULES:
        out = subprocess.run(
            [sys.executable, "-m", f"workbench.agents.bench.{mod}", str(n_messages),
             str(repeats), str(firsts)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        rows.extend(json.loads(out.stdout.strip().splitlines()[-1]))
    return pd.DataFrame(rows)

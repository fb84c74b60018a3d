"""Sweeps: a list of tasks run in-process or on Dask, results gathered in task order.

`scheduler` is None (in-process, the default), `local` or `local:N` (a LocalCluster of N
worker processes with one thread each, on 127.0.0.1), `tcp://HOST:PORT` (a running
`dask scheduler` with its workers), or a connected `distributed.Client`. The same task
functions run everywhere and their results come back in the order the tasks were listed, so a
sweep writes the same bytes whichever scheduler ran it. Dask is an optional extra
(`pip install workbench[dask]`), imported only when a scheduler is given.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

SCHEDULER_HELP = (
    "where tasks run: in-process (default), local[:N] (a LocalCluster of N worker processes), "
    "or tcp://HOST:PORT (a running dask scheduler)"
)
_LOCAL = re.compile(r"local(?::(\d+))?")
_TCP = re.compile(r"tcp://[^\s:/]+:\d+")


def parse_scheduler(value):
    """A scheduler as given on the command line or in a notebook parameter; None = in-process."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    if not isinstance(value, str):
        return value  # a connected Client
    text = value.strip()
    m = _LOCAL.fullmatch(text)
    if m:
        if m.group(1) is not None and int(m.group(1)) < 1:
            raise ValueError(f"bad scheduler {value!r}: local:N needs N >= 1 workers")
        return text
    if _TCP.fullmatch(text):
        return text
    raise ValueError(f"bad scheduler {value!r}; expected local, local:N or tcp://HOST:PORT")


def scheduler_arg(text: str):
    """An argparse `type` for --scheduler."""
    try:
        return parse_scheduler(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ValueError(
            "--scheduler needs Dask: pip install 'workbench[dask]' (scripts/setup_env.sh "
            "installs it)"
        ) from None
    return distributed


@contextmanager
def connect(scheduler, dashboard: bool = False) -> Iterator:
    """A Dask client for a scheduler (None: yields None); a LocalCluster it started is closed
    on exit, a client passed in is left open."""
    scheduler = parse_scheduler(scheduler)
    if scheduler is None or not isinstance(scheduler, str):
        yield scheduler
        return
    distributed = _distributed()
    if scheduler.startswith("local"):
        n = int(scheduler.split(":")[1]) if ":" in scheduler else min(os.cpu_count() or 1, 4)
        cluster = distributed.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0" if dashboard else None,
        )
        client = distributed.Client(cluster)
    else:
        cluster, client = None, distributed.Client(scheduler)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close(timeout=30)


def run_tasks(
    fn: Callable,
    tasks: Sequence[tuple],
    scheduler=None,
    shared=None,
    progress: bool = False,
) -> list:
    """[fn(*task, shared) for task in tasks], in-process or on Dask, in task order.

    `shared` (an embedding table, say) goes to each worker once and stays in its memory for
    every task that worker runs. `progress` shows Dask's progress bar (a widget in notebooks).
    """
    if parse_scheduler(scheduler) is None:
        return [fn(*task, shared) for task in tasks]
    with connect(scheduler) as client:
        # a one-item list: scatter would spread a dict's or a list's items as separate data
        shared_ref = client.scatter([shared], broadcast=True)[0] if shared is not None else None
        futures = [client.submit(fn, *task, shared_ref, pure=False) for task in tasks]
        if progress:  # a text bar in a terminal; in a notebook a widget, returned to be shown
            bar = _distributed().progress(futures)
            if bar is not None:
                from IPython.display import display

                display(bar)
        return client.gather(futures)  # in submission order, whatever order they finished in


def chunks(lo: int, hi: int, size: int) -> list[tuple[int, int]]:
    """[lo, hi) cut into half-open pieces of at most `size` seeds."""
    size = max(int(size), 1)
    return [(a, min(a + size, hi)) for a in range(lo, hi, size)]


class TableEncoder:
    """An encoder served from a fixed table of texts and rows (what one client-side encode
    produced); picklable and small, so every worker uses exactly the client's bits."""

    def __init__(self, name: str, texts: Sequence[str], rows: np.ndarray):
        self.name = name
        self.dim = rows.shape[1] if rows.ndim == 2 else 0
        self.rows = rows
        self.index = {t: i for i, t in enumerate(texts)}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), dtype=self.rows.dtype)
        return self.rows[[self.index[t] for t in texts]]

    def __repr__(self) -> str:
        return f"TableEncoder({self.name}, {len(self.index)} texts, dim={self.dim})"


def table_encoder(encoder, batches: Sequence[Sequence[str]]) -> TableEncoder:
    """Encode `batches` in order through `encoder` (as an in-process run would call it) and keep
    the rows of every text they hold."""
    texts, rows = [], []
    for batch in batches:
        vecs = encoder(list(batch))
        texts += list(batch)
        rows.append(np.asarray(vecs))
    if not rows:
        return TableEncoder(encoder.name, [], np.zeros((0, encoder.dim)))
    matrix = np.concatenate(rows)
    first = {}
    for i, t in enumerate(texts):
        first.setdefault(t, i)
    keep = np.array(sorted(first.values()), dtype=np.int64)
    return TableEncoder(encoder.name, [texts[i] for i in keep], matrix[keep])

"""Where and when a recorded measurement was taken: the columns every committed measurement
table carries (source, date, machine, load), and the words a figure drawn from one says."""

from __future__ import annotations

import datetime as dt
import os

import pandas as pd

COLUMNS = ("source", "date", "machine", "load")


def machine() -> str:
    """This machine as a measurement depends on it: cores, numpy and the BLAS numpy calls."""
    import numpy as np
    from threadpoolctl import threadpool_info

    blas = next((i for i in threadpool_info() if i.get("user_api") == "blas"), None)
    lib = f"{blas['internal_api']} {blas.get('version') or '?'}" if blas else "no BLAS found"
    return f"{os.cpu_count()} cores, numpy {np.__version__} ({lib})"


def stamp(source: str) -> dict:
    """The provenance columns of a row measured now: what produced it, the UTC date, this
    machine and the 1-minute load average."""
    return {
        "source": source,
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "machine": machine(),
        "load": round(os.getloadavg()[0], 1),
    }


def recorded(table: pd.DataFrame) -> str:
    """'recorded 2026-12-01 on 2 cores, numpy 2.4.6 (openblas 0.3.31), load 0.4-1.2': the words
    a figure drawn from a recorded table says in its title (dates, machines and loads as they
    are in the table)."""
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"a recorded table needs the columns {list(COLUMNS)}; missing {missing}")
    dates = sorted(set(table["date"].astype(str)))
    machines = sorted(set(table["machine"].astype(str)))
    lo, hi = float(table["load"].min()), float(table["load"].max())
    load = f"load {lo:.1f}" if lo == hi else f"load {lo:.1f}-{hi:.1f}"
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    return f"recorded {when} on {'; '.join(machines)}, {load}"

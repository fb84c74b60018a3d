"""Sweeps on Dask give the bytes of the in-process run: a real `dask scheduler` with two
`dask worker` processes on 127.0.0.1 (free ports, stopped by pid here), and a LocalCluster."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.common.sweep import chunks, parse_scheduler, run_tasks

pytest.importorskip("distributed")

BIN = Path(sys.executable).parent


def test_scheduler_grammar():
    assert parse_scheduler(None) is None and parse_scheduler("") is None
    assert parse_scheduler("local") == "local" and parse_scheduler("local:3") == "local:3"
    assert parse_scheduler("tcp://127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    for bad in ("local:0", "locale", "tcp://host", "http://127.0.0.1:1", "8786"):
        with pytest.raises(ValueError, match="scheduler"):
            parse_scheduler(bad)
    assert chunks(3, 15, 5) == [(3, 8), (8, 13), (13, 15)]


def test_bad_scheduler_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["suite", "main", "--scheduler", "local:0", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "local:N needs N >= 1" in capsys.readouterr().err


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1; the scheduler picks a free
    port (--port 0) and tells the workers through its scheduler file."""
    tmp = tmp_path_factory.mktemp("dask")
    info = tmp / "scheduler.json"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    log = open(tmp / "cluster.log", "w")  # noqa: SIM115 - closed below
    procs = [
        subprocess.Popen(
            [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(info)],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp,
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not info.exists() or not info.read_text().strip():
            assert procs[0].poll() is None, (tmp / "cluster.log").read_text()
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        for i in range(2):
            procs.append(
                subprocess.Popen(
                    [BIN / "dask", "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                     "--no-nanny", "--no-dashboard", "--name", f"w{i}",
                     "--local-directory", str(tmp / f"w{i}")],
                    stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp,
                )
            )  # fmt: skip
        from distributed import Client

        with Client(address, timeout=120) as c:
            c.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for p in procs[1:] + procs[:1]:  # by pid: the workers first, then the scheduler
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()


def test_tasks_come_back_in_task_order(dask_cluster):
    # a builtin, so the workers can unpickle it: pow(x, 2, shared) is x * x % shared
    tasks = [(x, 2) for x in range(40)]
    assert run_tasks(pow, tasks, dask_cluster, shared=1000) == [x * x % 1000 for x in range(40)]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))}


@pytest.mark.sentence
@pytest.mark.slow
def test_suite_on_separate_worker_processes_writes_the_same_bytes(dask_cluster, tmp_path):
    args = ["suite", "main", "--seeds", "0:4"]
    assert main([*args, "--out", str(tmp_path / "here")]) == 0
    assert main([*args, "--out", str(tmp_path / "dask"), "--scheduler", dask_cluster]) == 0
    here, there = _files(tmp_path / "here"), _files(tmp_path / "dask")
    assert set(here) == {"runs.csv", "summary.csv"}
    assert here == there
    assert b"sentence" in here["runs.csv"] and b"lexical" in here["runs.csv"]


@pytest.mark.sentence
@pytest.mark.slow
def test_recall_grid_on_separate_worker_processes_writes_the_same_bytes(dask_cluster, tmp_path):
    args = ["recall", "grid", "--episodes", "40", "--boot", "200", "--queries", "both"]
    assert main([*args, "--out", str(tmp_path / "here")]) == 0
    assert main([*args, "--out", str(tmp_path / "dask"), "--scheduler", dask_cluster]) == 0
    here, there = _files(tmp_path / "here"), _files(tmp_path / "dask")
    assert len(here) == 3 and here == there


@pytest.mark.slow
def test_calibration_on_worker_processes_matches_in_process(dask_cluster):
    from workbench.dsgc.calibration import regime_checks

    here = regime_checks((0, 6), encoders=("lexical",))
    there = regime_checks((0, 6), encoders=("lexical",), scheduler=dask_cluster)
    assert here.to_csv(index=False) == there.to_csv(index=False)


@pytest.mark.slow
def test_a_local_cluster_starts_runs_and_stops():
    assert run_tasks(pow, [(3, 2), (4, 2)], "local:1", shared=7) == [2, 2]

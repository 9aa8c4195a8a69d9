"""Sweeps on real Dask clusters on 127.0.0.1: a worker killed mid-task, a separately started
scheduler and workers, workers that cannot see the sweep directory, the directory lock, the
status command, and accuracy for a network with the user's own data."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from workbench import sweep
from workbench.errors import WorkbenchError

BIN = Path(sys.executable).parent
GRID = dict(networks=["lenet5", "cifar10_quick"], platforms=["idsp", "nve"], batch=4,
            memory_kb=[4, 16, 64, 256], overrides={"simd_lanes": [8, 16, 32]})


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    """The grid's rows from one uninterrupted run in this process."""
    frame = sweep.run(sweep.Grid(**GRID))
    assert len(frame) == 48 and not frame.attrs["failures"]
    return frame


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert a["case_id"].is_unique and b["case_id"].is_unique
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_worker_killed_mid_task_loses_and_duplicates_nothing(tmp_path: Path,
                                                             reference: pd.DataFrame) -> None:
    from dask.distributed import Client, LocalCluster

    killed: list[int] = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)  # worker address -> its process id

        def kill_a_busy_worker() -> None:
            deadline = time.time() + 120
            while time.time() < deadline and not killed:
                rows = len(list((tmp_path / "rows").glob("*.json")))
                busy = [w for w, tasks in client.processing().items() if tasks]
                if rows >= 3 and busy:
                    os.kill(pids[busy[0]], signal.SIGKILL)  # a real kill, mid-task
                    killed.append(pids[busy[0]])
                time.sleep(0.02)

        killer = threading.Thread(target=kill_a_busy_worker)
        killer.start()
        # the sweep runs on this test's own client: one client per process
        frame = sweep.run(sweep.Grid(**GRID), tmp_path, pool=sweep.DaskExecutor(client=client))
        killer.join()
    assert killed, "no worker was busy while the sweep ran"
    assert frame.attrs["failures"] == []
    _same_rows(frame, reference)
    assert sorted(p.stem for p in (tmp_path / "rows").glob("*.json")) == sorted(
        reference["case_id"])
    assert not list((tmp_path / "rows").glob(".*"))  # no temporary file left behind


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_separately_started_scheduler_and_workers(tmp_path: Path,
                                                  reference: pd.DataFrame) -> None:
    """`dask scheduler` + `dask worker` processes: the same rows, whether the workers see the
    sweep directory (they commit) or not (the client commits)."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    elsewhere, client_dir = tmp_path / "worker_cwd", tmp_path / "client_cwd"
    elsewhere.mkdir()
    client_dir.mkdir()
    (client_dir / "grid.yaml").write_text(json.dumps(GRID))  # JSON is YAML
    procs = [subprocess.Popen([BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port",
                               str(port), "--no-dashboard"], cwd=elsewhere,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen([BIN / "dask", "worker", address, "--nworkers", "2",
                                       "--nthreads", "1", "--no-dashboard"], cwd=elsewhere,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        cli = [sys.executable, "-m", "workbench.cli", "sweep", "grid.yaml", "--json"]
        # a relative --out: the workers, in another folder, cannot see it
        hidden = subprocess.run([*cli, "--out", "swept", "--scheduler", address],
                                cwd=client_dir, capture_output=True, text=True, timeout=300)
        assert hidden.returncode == 0, hidden.stderr
        assert json.loads(hidden.stdout)["client_writes"] == 48
        shared = subprocess.run([*cli, "--out", str(tmp_path / "shared")], cwd=client_dir,
                                capture_output=True, text=True, timeout=300,
                                env={**os.environ, "DASK_SCHEDULER_ADDRESS": address})
        assert shared.returncode == 0, shared.stderr
        assert json.loads(shared.stdout)["client_writes"] == 0  # the workers committed
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=60)
    for folder in (client_dir / "swept", tmp_path / "shared"):
        _same_rows(pd.read_parquet(folder / "results.parquet"), reference)


def test_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    """A closed port is refused in one line once --connect-timeout (2 s here; 20 s by
    default) has passed, not sooner."""
    (tmp_path / "g.yaml").write_text("networks: [lenet5]\nplatforms: [idsp]\n")
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", str(tmp_path / "g.yaml"),
                          "--out", str(tmp_path / "o"), "--scheduler",
                          f"tcp://127.0.0.1:{_free_port()}", "--connect-timeout", "2"],
                         capture_output=True, text=True, timeout=120)
    assert time.monotonic() - start >= 2  # it kept trying for the whole timeout
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "cannot connect" in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_concurrent_runs_on_one_directory_are_refused(tmp_path: Path) -> None:
    store = sweep.SweepStore(tmp_path)
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1, memory_kb=[64])
    with store.lock():
        with pytest.raises(WorkbenchError, match=r"is in use by pid \d+ on .* since"):
            sweep.run(grid, tmp_path)
        (tmp_path / "g.yaml").write_text("networks: [lenet5]\nplatforms: [idsp]\nbatch: 1\n")
        cli = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep",
                              str(tmp_path / "g.yaml"), "--out", str(tmp_path)],
                             capture_output=True, text=True, timeout=120)
        assert cli.returncode == 2 and "is in use by" in cli.stderr
        assert len(cli.stderr.strip().splitlines()) == 1
    # a lock left by a process that died on this host is taken over
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    (tmp_path / ".lock").write_text(json.dumps({"token": "x", "host": socket.gethostname(),
                                                "pid": int(dead.stdout), "started": "then"}))
    assert len(sweep.run(grid, tmp_path)) == 1
    assert not (tmp_path / ".lock").exists()  # released at the end


def test_status_counts_done_failed_pending(tmp_path: Path) -> None:
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1,
                      memory_kb=[0.1, 16, 64])
    sweep.run(grid, tmp_path)
    bigger = sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1,
                        memory_kb=[0.1, 16, 64, 128, 256])
    sweep.SweepStore(tmp_path).write_grid(bigger)  # the grid grew: two cases pending
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", "--status",
                          str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    head, failure = run.stdout.strip().splitlines()
    assert head == "2 done, 1 failed, 2 pending"
    assert failure.startswith("failed: case ") and "too small for any tile" in failure
    missing = subprocess.run([sys.executable, "-m", "workbench.cli", "sweep", "--status",
                              str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


TINY = """name: tiny
input: [3, 8, 8]
layers:
  - {name: conv1, type: conv, maps: 6, kernel: 3, stride: 1, pad: 1}
  - {name: relu1, type: relu}
  - {name: pool1, type: pool, mode: max, kernel: 2, stride: 2}
  - {name: fc2, type: fc, outputs: 4}
"""


def _float_forward(x: np.ndarray, arrays: dict) -> np.ndarray:
    """The tiny network in float, written out here (not the workbench's inference)."""
    w, b = arrays["conv1.weight"], arrays["conv1.bias"]
    pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((len(x), 6, 8, 8))
    for i in range(3):
        for j in range(3):
            out += np.einsum("ncyx,oc->noyx", pad[:, :, i:i + 8, j:j + 8], w[:, :, i, j])
    out = np.maximum(out + b[None, :, None, None], 0)
    pooled = out.reshape(len(x), 6, 4, 2, 4, 2).max(axis=(3, 5)).reshape(len(x), -1)
    return pooled @ arrays["fc2.weight"].T + arrays["fc2.bias"]


def test_accuracy_for_a_network_with_its_own_data(tmp_path: Path) -> None:
    """A non-MNIST network with an .npz of weights and data gets an accuracy column; labels
    are the float network's own predictions, so the wide accumulator keeps nearly all and a
    4-bit one cannot; a network without data gets a note instead of a failure."""
    rng = np.random.default_rng(7)
    (tmp_path / "tiny.yaml").write_text(TINY)
    arrays = {"conv1.weight": rng.normal(0, 0.3, (6, 3, 3, 3)), "conv1.bias": rng.normal(0, .1, 6),
              "fc2.weight": rng.normal(0, 0.3, (4, 96)), "fc2.bias": rng.normal(0, .1, 4)}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    x = rng.uniform(0, 1, (600, 3, 8, 8)).astype(np.float32)
    y = _float_forward(x, arrays).argmax(axis=1)
    np.savez(tmp_path / "tiny.npz", calib_x=x[:300], calib_y=y[:300], test_x=x[300:],
             test_y=y[300:], **arrays)
    net = str(tmp_path / "tiny.yaml")
    grid = sweep.Grid(networks=[net, "cifar10_quick"], platforms=["idsp"], memory_kb=[64],
                      acc_bits=[32, 4], data={net: str(tmp_path / "tiny.npz")},
                      weights={"cifar10_quick": "cifar_weights.npz"})
    frame = sweep.run(grid, tmp_path / "out")
    (note,) = frame.attrs["notes"]
    assert "'cifar10_quick' has weights but no calibration/test data" in note
    frame = frame.set_index(["network", "acc_bits"])
    assert frame.loc[(net, 32), "accuracy"] >= 0.95
    assert np.isnan(frame.loc[(net, 4), "accuracy"]) or frame.loc[(net, 4), "accuracy"] < 0.9
    assert frame.loc["cifar10_quick", "accuracy"].isna().all()  # no column value, no failure
    assert not frame.attrs["failures"]
    mnist = sweep.run(sweep.Grid(networks=["lenet5"], platforms=["idsp"], batch=1,
                                 weights={"lenet5": "lenet5_mnist.npz"}))
    assert 0.9 < mnist["accuracy"].iloc[0] <= 1  # MNIST-shaped: the shipped digits
    bad = tmp_path / "bad.npz"
    np.savez(bad, calib_x=x[:10], calib_y=y[:10].astype(float), test_x=x[:10], test_y=y[:10])
    with pytest.raises(WorkbenchError, match="calib_y: must be integer class labels"):
        sweep.run(sweep.Grid(networks=[net], platforms=["idsp"], data={net: str(bad)}))
    with pytest.raises(WorkbenchError, match=r"calib_x: must be float images N×3×32×32"):
        sweep.run(sweep.Grid(networks=["cifar10_quick"], platforms=["idsp"],
                             data={"cifar10_quick": str(tmp_path / "tiny.npz")}))


def _descendants(pid: int) -> set[int]:
    """Every process below pid (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_client_leaves_no_workers_and_resumes(tmp_path: Path, sig: int,
                                                      reference: pd.DataFrame) -> None:
    (tmp_path / "grid.yaml").write_text(json.dumps(GRID))
    cli = [sys.executable, "-m", "workbench.cli", "sweep", str(tmp_path / "grid.yaml"),
           "--out", str(tmp_path / "out"), "--jobs", "2"]
    proc = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rows = tmp_path / "out" / "rows"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(rows.glob("*.json"))) < 3:
        time.sleep(0.05)
    workers = _descendants(proc.pid)
    assert workers, "the sweep started no worker processes"
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    if sig == signal.SIGTERM:
        assert proc.returncode == 130 and "Traceback" not in err
        assert "interrupted; what was committed is kept" in err
    deadline = time.time() + 30
    while time.time() < deadline and _alive(workers):
        time.sleep(0.2)
    assert not _alive(workers), "worker processes outlived their sweep"
    done = len(list(rows.glob("*.json")))
    assert 0 < done < 48
    rerun = subprocess.run([*cli, "--json"], capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    _same_rows(pd.read_parquet(tmp_path / "out" / "results.parquet"), reference)

"""Sweeps never hang (issue 58): every Dask worker killed again and again, or none left at all,
ends the sweep in one line naming the case and the cause within 60 s; the rows done are kept
untouched and running the same command again completes the grid. SIGINT and SIGTERM at any
moment end it with one line and no traceback."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from test_sweep_dask import _free_port

from workbench import sweep
from workbench.errors import WorkbenchError

BIN = Path(sys.executable).parent
# lenet5's cases end in half a second, vgg16's take 10 s each with a fresh candidate cache:
# the first rows are written while the workers still have seconds of work (a lenet5-only
# grid could end in one burst of rows before the first kill: 0 kills, seen in full CI runs)
GRID = dict(networks=["lenet5", "vgg16"], platforms=["idsp"], batch=4, memory_kb=[64, 256],
            overrides={"simd_lanes": [8, 16]})
STOPPED = "the rows done are kept; run the same command again to resume"


@pytest.fixture(scope="module")
def reference() -> pd.DataFrame:
    return sweep.run(sweep.Grid(**GRID))


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(stat[1]) == pid and stat[0] != "Z":
            out.add(int(entry.name))
    return out


def _workers(pid: int) -> set[int]:
    """The worker processes of an embedded cluster: spawned children (not the tracker).
    Matched by `spawn_main`: a PYTHONWARNINGS filter naming the resource tracker (set by an
    embedded cluster started earlier in this test process) reaches every child's command line."""
    out = set()
    for child in _children(pid):
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmd:
            out.add(child)
    return out


def _env(tmp_path: Path) -> dict[str, str]:
    """A fresh candidate cache (cases take long enough to be killed mid-sweep) and an
    embedded cluster."""
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(tmp_path / "cache")}
    # an embedded cluster, whose workers are this command's children: never a scheduler
    # another test left in the environment (its workers are not ours to kill)
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    return env


def _rows(out: Path) -> dict[str, int]:
    return {p.stem: p.stat().st_mtime_ns for p in (out / "rows").glob("*.json")}


def _resume_completes(cli: list[str], out: Path, kept: dict[str, int],
                      reference: pd.DataFrame) -> None:
    again = subprocess.run(cli, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert {k: v for k, v in _rows(out).items() if k in kept} == kept  # not recomputed
    frame = pd.read_parquet(out / "results.parquet")
    pd.testing.assert_frame_equal(frame.reset_index(drop=True),
                                  reference.reset_index(drop=True))


def test_workers_killed_again_and_again_end_the_sweep_in_one_line(
        tmp_path: Path, reference: pd.DataFrame) -> None:
    (tmp_path / "grid.yaml").write_text(json.dumps(GRID))
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "workbench.cli", "sweep", str(tmp_path / "grid.yaml"), "--out",
           str(out), "--jobs", "2", "--json"]
    proc = subprocess.Popen([*cli, "--no-worker-timeout", "10"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    deadline = time.monotonic() + 120
    while proc.poll() is None and not _rows(out) and time.monotonic() < deadline:
        time.sleep(0.05)
    start, kills = time.monotonic(), 0
    while proc.poll() is None and time.monotonic() - start < 60:
        for pid in _workers(proc.pid):  # every worker, as often as they come back
            os.kill(pid, signal.SIGKILL)
            kills += 1
        time.sleep(0.3)
    _out, err = proc.communicate(timeout=30)
    took = time.monotonic() - start
    print(f"{kills} kills; the sweep ended {took:.1f} s after the first")
    assert kills >= 2 and took < 60
    # the whole of stderr is one line: what the embedded workers print (Dask's own text, a
    # worker restarted while the cluster closes) goes to the sweep folder's workers.log
    lines = err.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, err[-3000:]
    assert lines[0].startswith("workbench sweep: error: sweep stopped: ")
    assert "case " in lines[0] and " B, 16-bit, {'simd_lanes': " in lines[0]  # it is named
    assert any(cause in lines[0] for cause in (
        "killed its Dask worker 3 times (out of memory or a crash)",
        "Dask workers lost (killed or crashed), beyond the 10 allowed",
        "no Dask worker stayed up for 10 s")), lines[0]
    assert lines[0].endswith(STOPPED)
    kept = _rows(out)
    assert 0 < len(kept) < len(reference)
    _resume_completes(cli, out, kept, reference)


def test_no_worker_left_ends_the_sweep_after_the_timeout(tmp_path: Path,
                                                         reference: pd.DataFrame) -> None:
    """An external cluster whose only worker (no nanny to restart it) is killed: the sweep
    used to wait forever; now it ends --no-worker-timeout seconds later."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    (tmp_path / "grid.yaml").write_text(json.dumps(GRID))
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "workbench.cli", "sweep", str(tmp_path / "grid.yaml"), "--out",
           str(out), "--json"]
    scheduler = subprocess.Popen([BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port",
                                  str(port), "--no-dashboard"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([BIN / "dask", "worker", address, "--no-nanny", "--nthreads", "1",
                               "--no-dashboard"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=_env(tmp_path))
    try:
        proc = subprocess.Popen([*cli, "--scheduler", address, "--no-worker-timeout", "3"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=_env(tmp_path))
        deadline = time.monotonic() + 120
        while proc.poll() is None and not _rows(out) and time.monotonic() < deadline:
            time.sleep(0.05)
        worker.kill()
        killed = time.monotonic()
        _out, err = proc.communicate(timeout=60)
        took = time.monotonic() - killed
    finally:
        for p in (worker, scheduler):
            p.kill()
            p.wait(timeout=30)
    print(f"the sweep ended {took:.1f} s after its only worker was killed")
    lines = err.strip().splitlines()  # the external worker's own output is its own
    assert proc.returncode == 2 and len(lines) == 1, err[-3000:]
    # "(1 lost)" once the scheduler has dropped the killed worker; on a loaded machine its
    # heartbeat can outlast the 3 s, and the sweep rightly stops with "(0 lost)"
    assert re.match(r"workbench sweep: error: sweep stopped: no Dask worker stayed up for 3 s "
                    r"\([01] lost\) ", lines[0]), lines[0]
    assert " running case " in lines[0] or " waiting" in lines[0]
    assert lines[0].endswith(STOPPED)
    assert took < 15  # 3 s after the last sign of a working cluster
    kept = _rows(out)
    assert 0 < len(kept) < len(reference)
    _resume_completes(cli, out, kept, reference)  # on an embedded cluster this time


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_at_any_moment_is_one_line(tmp_path: Path, sig: int) -> None:
    """While Python imports the command line, while the cluster starts, while cases run: rc
    130, one line on stderr, no traceback (the cluster's start and close finish first)."""
    (tmp_path / "grid.yaml").write_text(json.dumps(GRID))
    for delay in (0.2, 1.5, 3.0):
        cli = [sys.executable, "-m", "workbench.cli", "sweep", str(tmp_path / "grid.yaml"),
               "--out", str(tmp_path / f"out{delay}"), "--jobs", "2", "--json"]
        proc = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
        lines = err.strip().splitlines()
        assert proc.returncode == 130 and len(lines) == 1, (delay, err[-3000:])
        assert "Traceback" not in err and lines[0] in (
            "workbench: interrupted while starting; nothing was done",
            "workbench sweep: interrupted; what was committed is kept"), (delay, lines)


def _noisy(item: int) -> int:
    """A task that writes to its worker's stderr, through Python and through the descriptor."""
    print(f"python says {item}", file=sys.stderr, flush=True)
    os.write(2, f"descriptor says {item}\n".encode())
    return item * 2


def test_embedded_workers_write_their_stderr_to_the_worker_log(tmp_path: Path, capfd) -> None:
    """The embedded cluster's workers shared the command's stderr, so Dask's own text from a
    worker (a traceback while the cluster closes) could follow the command's one line; with
    a worker log their stderr is that file, and the command's stderr stays its own."""
    log = tmp_path / "sweep" / "workers.log"
    with sweep.executor(2, engine="dask", worker_log=str(log)) as pool:
        assert sorted(pool.imap(_noisy, range(4))) == [0, 2, 4, 6]
    err = capfd.readouterr().err
    assert "says" not in err, err[-2000:]
    text = log.read_text()
    for i in range(4):
        assert f"python says {i}" in text and f"descriptor says {i}" in text, text[-2000:]
    with sweep.executor(1, engine="dask") as pool:  # no log: as before, the command's stderr
        assert list(pool.imap(_noisy, [7])) == [14]
    assert "descriptor says 7" in capfd.readouterr().err


def _deadly(item: int) -> int:
    """Item 3 kills its own worker process, as the kernel's OOM killer would (SIGKILL)."""
    if item == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return item


def test_a_case_that_kills_its_worker_ends_the_sweep_naming_it() -> None:
    """A case that keeps killing its worker (out of memory) was retried for ever: now, after
    `task_kills` deaths, one line names it and the cause, within seconds."""
    patience = sweep.Patience(task_kills=2, no_worker_s=60)
    start = time.monotonic()
    done = []
    with sweep.executor(2, engine="dask", patience=patience) as pool, \
            pytest.raises(WorkbenchError) as info:
        for result in pool.imap(_deadly, range(6), describe=lambda i: f"case #{i}"):
            done.append(result)
    took = time.monotonic() - start
    print(f"stopped {took:.1f} s after the start: {info.value}")
    assert str(info.value) == ("sweep stopped: case #3 killed its Dask worker 2 times (out of "
                               f"memory or a crash); {STOPPED}")
    assert 3 not in done and took < 60


def test_sigterm_while_every_worker_is_gone_is_one_line(tmp_path: Path) -> None:
    """The old hang's last act: once every worker was gone a SIGTERM printed a
    distributed.AllExit traceback. Workers killed again and again, then SIGTERM inside the
    patience window: rc 130, one line, the rows kept."""
    (tmp_path / "grid.yaml").write_text(json.dumps(GRID))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "workbench.cli", "sweep",
                             str(tmp_path / "grid.yaml"), "--out", str(out), "--jobs", "2",
                             "--json", "--no-worker-timeout", "120"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    deadline = time.monotonic() + 120
    while proc.poll() is None and not _rows(out) and time.monotonic() < deadline:
        time.sleep(0.05)
    start, kills = time.monotonic(), 0
    while proc.poll() is None and time.monotonic() - start < 3:
        for pid in _workers(proc.pid):
            os.kill(pid, signal.SIGKILL)
            kills += 1
        time.sleep(0.2)
    kept = _rows(out)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    _out, err = proc.communicate(timeout=60)
    print(f"{kills} kills, then SIGTERM: ended {time.monotonic() - sent:.1f} s later")
    lines = err.strip().splitlines()
    assert kills >= 2 and proc.returncode == 130 and len(lines) == 1, (kills, err[-3000:])
    assert lines[0] == "workbench sweep: interrupted; what was committed is kept"
    assert {k: v for k, v in _rows(out).items() if k in kept} == kept and kept

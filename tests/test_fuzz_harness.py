"""The fuzzing harness of the suite (used by test_fuzz_yaml.py and test_import_fuzz.py), and
its own tests: it tells a clean load, a clean one-line error, a traceback and a time-out apart.

`generate(strategy, count, seed)` draws `count` mutated files from a hypothesis strategy with a
fixed seed. `run_files(items, tmp_path)` loads each file in a worker subprocess (address space
capped at 6 GiB), every file under an alarm of PER_FILE_S seconds; a worker that hangs in C code
or dies is killed or noticed, its file counted, and a new worker goes on with the rest.
`fuzz_count(default)` is the number of files per format: `default` in the normal suite, the
WORKBENCH_FUZZ_FILES environment variable (`make fuzz`: 2,000) when larger.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
PER_FILE_S = 10
OUTCOMES = ("ok", "error", "traceback", "timeout")

WORKER = r"""
import json, resource, signal, sys, warnings
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))  # a runaway allocation fails here
from workbench.errors import WorkbenchError


class FileTimeout(BaseException):
    pass


def alarm(signum, frame):
    raise FileTimeout()


def load_network(path):
    from workbench import layers
    net = layers.load_network(path)
    ok = all(isinstance(v, int) and v > 0 for lay in net
             for v in (*lay.in_shape, *lay.out_shape, lay.On))
    return ok and net.macs >= 0 and net.params >= 0 and len(net) > 0


def load_grid(path):
    from workbench import sweep
    grid = sweep.Grid.from_yaml(path)
    size = 1
    for values in (grid.networks, grid.platforms, grid.memory_kb, grid.acc_bits,
                   grid.objectives, grid.fusion, grid.traffic_models or [None],
                   *grid.overrides.values()):
        size *= len(values)
    return size > 5000 or len(sweep.cases(grid)) == size


def selftest(path):
    what = open(path).read().strip()
    if what == "hang":
        while True:
            pass
    if what == "deaf hang":  # where the alarm cannot reach, as in C code
        import signal
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        while True:
            pass
    if what == "crash":
        return {}["missing"]
    if what == "two lines":
        raise WorkbenchError("first line\nsecond line")
    if what == "error":
        raise WorkbenchError("one clean line")
    if what == "die":
        import os
        os._exit(3)
    return True


def load_hierarchy(path):
    from workbench import platforms
    platforms.check_hierarchy(path)
    return True


def load_platform(path):
    # loaded, then one small layer planned on it: nothing may come out NaN or infinite
    import numpy as np
    from workbench import explore, platforms
    from workbench.layers.builder import network_from_dict
    p = platforms.load_platform(path)
    net = network_from_dict({"name": "tiny", "input": [3, 8, 8], "layers": [
        {"name": "c", "type": "conv", "maps": 8, "kernel": 3, "pad": 1},
        {"name": "r", "type": "relu"}]}, "tiny")
    plan = explore.network_plan(net, p)
    costs = [c for c in plan if c.startswith(("cycles", "energy")) or c in (
        "ext_accesses", "dma_transfers", "footprint_bytes", "throughput_gops", "edp")]
    return bool(np.isfinite(plan[costs].to_numpy(dtype=float)).all()) \
        and bool(np.isfinite(p.peak_gops))


LOADERS = {"network": load_network, "grid": load_grid, "hierarchy": load_hierarchy,
           "platform": load_platform, "selftest": selftest}
signal.signal(signal.SIGALRM, alarm)
warnings.simplefilter("ignore")
for kind, path in json.load(open(sys.argv[1])):
    print(json.dumps({"file": path, "started": True}), flush=True)
    signal.alarm(int(sys.argv[2]))
    try:
        good = LOADERS[kind](path)
        row = {"outcome": "ok"} if good else {"outcome": "traceback", "message": "bad load"}
    except WorkbenchError as exc:
        text = str(exc)
        clean = bool(text.strip()) and "\n" not in text
        row = {"outcome": "error" if clean else "traceback", "type": type(exc).__name__,
               "message": text[:300]}
    except FileTimeout:
        row = {"outcome": "timeout", "message": f"over {sys.argv[2]} s"}
    except BaseException as exc:
        row = {"outcome": "traceback", "type": type(exc).__name__, "message": repr(exc)[:300]}
    finally:
        signal.alarm(0)
    print(json.dumps({"file": path, **row}), flush=True)
"""


def fuzz_count(default: int) -> int:
    """Files per format: `default`, or WORKBENCH_FUZZ_FILES (the long profile) when larger."""
    return max(default, int(os.environ.get("WORKBENCH_FUZZ_FILES", "0") or 0))


def generate(strategy: st.SearchStrategy, count: int, fixed_seed: int) -> list[Any]:
    """`count` values drawn from `strategy`, the same on every run (a fixed seed)."""
    drawn: list[Any] = []

    @seed(fixed_seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              derandomize=False, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: Any) -> None:
        drawn.append(value)

    collect()
    return drawn


def _reader(stream: Any, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _worker(items: list[tuple[str, str]], tmp_path: Path, per_file_s: int,
            grace_s: int) -> list[dict]:
    """Rows of one worker run over `items`; stops early when the worker hangs or dies (the
    row of the file it was on says which)."""
    listing = tmp_path / f"fuzz_{time.monotonic_ns()}.json"
    listing.write_text(json.dumps(items))
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(listing), str(per_file_s)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=ROOT)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    rows: list[dict] = []
    current = None
    startup = 120  # the first file waits for the imports too
    while True:
        try:
            line = lines.get(timeout=per_file_s + grace_s + startup)
        except queue.Empty:  # stuck where the alarm cannot reach (C code): kill it
            proc.kill()
            proc.wait()
            if current is not None:
                rows.append({"file": current, "outcome": "timeout", "message": "killed"})
            break
        if line is None:  # the worker ended: done, or died on `current`
            proc.wait()
            if current is not None:
                rows.append({"file": current, "outcome": "traceback",
                             "message": f"worker died (exit {proc.returncode})"})
            break
        startup = 0
        row = json.loads(line)
        if row.get("started"):
            current = row["file"]
        else:
            rows.append(row)
            current = None
    listing.unlink()
    return rows


def run_files(items: list[tuple[str, Path]], tmp_path: Path, per_file_s: int = PER_FILE_S,
              grace_s: int = 20) -> list[dict]:
    """One row per file: outcome ok / error / traceback / timeout, and a message. A worker
    silent for per_file_s + grace_s seconds is killed (its file: timeout)."""
    todo = [(kind, str(path)) for kind, path in items]
    rows: list[dict] = []
    while todo:
        got = _worker(todo, tmp_path, per_file_s, grace_s)
        rows += got
        todo = todo[len(got):]
    return rows


def summarize(fmt: str, rows: list[dict], seconds: float) -> tuple[Counter, str]:
    """The outcome counts and the line that reports them."""
    counts = Counter(row["outcome"] for row in rows)
    return counts, (f"fuzz {fmt}: {len(rows)} files, {counts['error']} clean errors, "
                    f"{counts['ok']} clean loads, {counts['traceback']} tracebacks, "
                    f"{counts['timeout']} time-outs ({seconds:.0f} s)")


def check(fmt: str, items: list[tuple[str, Path]], tmp_path: Path,
          capsys: pytest.CaptureFixture | None = None, per_file_s: float = PER_FILE_S) -> Counter:
    """Run, print the counts (on the terminal, past pytest's capture, when given `capsys`),
    and require no traceback and no time-out (per_file_s: seconds a file may take)."""
    start = time.monotonic()
    rows = run_files(items, tmp_path, per_file_s=per_file_s)
    counts, line = summarize(fmt, rows, time.monotonic() - start)
    if capsys is not None:
        with capsys.disabled():
            print("\n" + line, flush=True)
    assert len(rows) == len(items)
    bad = [row for row in rows if row["outcome"] in ("traceback", "timeout")]
    assert not bad, bad[:5]
    return counts


def test_the_harness_tells_outcomes_apart(tmp_path: Path) -> None:
    """Each outcome is recognized, a hung or dead worker is replaced and the rest still run."""
    cases = ["ok", "error", "two lines", "crash", "hang", "die", "deaf hang", "ok"]
    items = []
    for index, what in enumerate(cases):
        path = tmp_path / f"case{index}.txt"
        path.write_text(what)
        items.append(("selftest", path))
    rows = run_files(items, tmp_path, per_file_s=1, grace_s=2)
    assert [row["outcome"] for row in rows] == ["ok", "error", "traceback", "traceback",
                                               "timeout", "traceback", "timeout", "ok"]
    assert [Path(row["file"]).name for row in rows] == [f"case{i}.txt" for i in range(8)]
    assert rows[6]["message"] == "killed"
    with pytest.raises(AssertionError, match="timeout"):
        check("selftest", items[4:5], tmp_path, per_file_s=1)


def test_generate_is_deterministic() -> None:
    strategy = st.lists(st.integers(0, 1000), max_size=5)
    first = generate(strategy, 30, 4)
    assert first == generate(strategy, 30, 4) and len(first) == 30
    assert first != generate(strategy, 30, 5)

"""Run a child process and measure it: exit code, output, seconds and its own peak resident
memory: the VmHWM of /proc/PID/status, read every 10 ms while it runs (rusage's ru_maxrss
would also count the pytest process it was forked from, kept across exec). A child that
outlives its time budget is killed and reported as timed out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Measured:
    """What a child did: rc (None: killed at the time budget), stdout, stderr, wall seconds
    and peak resident memory in MiB."""

    rc: int | None
    out: str
    err: str
    seconds: float
    peak_mib: float

    def figures(self) -> str:
        """'rc 2, 0.4 s, peak 338 MiB' (printed by the tests: `pytest -s` shows them)."""
        return f"rc {self.rc}, {self.seconds:.1f} s, peak {self.peak_mib:.0f} MiB"

    def one_line_refusal(self) -> str:
        """The refusal line of a clean failure (rc 2, no traceback, one stderr line)."""
        lines = self.err.strip().splitlines()
        print(self.figures(), lines[-1:])
        assert self.rc == 2, (self.rc, self.err[-2000:])
        assert "Traceback" not in self.err and len(lines) == 1, self.err[-2000:]
        return lines[0]


def measure(args: list[str], timeout_s: float, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> Measured:
    """Run `args` (a list, no shell) with output to files, kill its process group at
    `timeout_s`, and return its figures."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(args, stdout=out, stderr=err, cwd=cwd, start_new_session=True,
                                env={**os.environ, "OPENBLAS_NUM_THREADS": "1", **(env or {})})
        rc: int | None = None
        peak_kib = 0
        while True:
            peak_kib = max(peak_kib, _hwm_kib(proc.pid))  # before the zombie is reaped
            pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() - start > timeout_s:
                os.killpg(proc.pid, signal.SIGKILL)
                os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        proc.returncode = rc if rc is not None else -9  # reaped here, not by Popen
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Measured(rc, out.read().decode(errors="replace"),
                        err.read().decode(errors="replace"), seconds, peak_kib / 1024)


def _hwm_kib(pid: int) -> int:
    """The peak resident memory of a live process in KiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def workbench(*args: str, timeout_s: float = 60, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> Measured:
    """`workbench ARGS` in a child process, measured."""
    return measure([sys.executable, "-m", "workbench.cli", *args], timeout_s, env, cwd)


def python(code: str, timeout_s: float = 60, env: dict[str, str] | None = None) -> Measured:
    """`python -c CODE` in a child process, measured."""
    return measure([sys.executable, "-c", code], timeout_s, env)


def npz_bomb(path: Path, key: str, shape: tuple[int, ...], dtype: str = "<f4") -> Path:
    """A real .npz bomb: one member whose npy header claims `shape`, followed by that many
    zero bytes, deflated (1.5 GiB of zeros make a ~7 MB file in ~1.5 s)."""
    import zipfile

    import numpy as np

    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    chunk = bytes(64 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive, \
            archive.open(f"{key}.npy", "w", force_zip64=True) as member:
        np.lib.format.write_array_header_2_0(member, header)
        left = int(np.prod(shape)) * np.dtype(dtype).itemsize
        while left:
            member.write(chunk if left >= len(chunk) else chunk[:left])
            left -= min(left, len(chunk))
    return path

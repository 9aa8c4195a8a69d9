"""Run the report notebook: papermill executes notebooks/report.ipynb with parameters, each run
with its kernel sockets in a private runtime folder (concurrent runs never collide); `page`
exports the result as one self-contained HTML file."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench import spelling
from workbench.errors import WorkbenchError
from workbench.paths import notebooks_dir
from workbench.report.output import check_output_file, write_text
from workbench.report.page import to_html
from workbench.resources import cut

# always the installed package's notebook: WORKBENCH_DATA never supplies code (paths.py)
REPORT_NOTEBOOK = notebooks_dir() / "report.ipynb"


def _kernel_manager_class(private_dir: Path):
    """A kernel manager talking to the kernel over local IPC sockets where the OS has them
    (the default TCP transport makes ipykernel warn about unencrypted traffic). The sockets
    live in `private_dir`, one folder per run: concurrent runs never share a socket name. The
    kernel's own log (stderr: e.g. an interrupt when a loaded machine shuts it down slowly)
    goes to `private_dir`/kernel.log, quoted only if the kernel dies."""
    import os

    from jupyter_client.manager import KernelManager

    if os.name != "posix":
        return KernelManager

    class IPCKernelManager(KernelManager):
        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("ip", str(private_dir / "kernel-ipc"))
            super().__init__(**kwargs)

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            with open(private_dir / "kernel.log", "ab") as log:  # the child keeps its copy
                kw["stderr"] = log
                await super()._async_launch_kernel(kernel_cmd, **kw)

    return IPCKernelManager


def execute(notebook: Path, parameters: dict[str, Any], timeout_s: int = 600,
            progress: bool = False) -> Any:
    """Run a notebook with papermill; returns the executed nbformat notebook. `progress`:
    a bar of executed cells with elapsed time and ETA on stderr."""
    import nbformat
    import papermill as pm
    from nbclient.exceptions import DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    with tempfile.TemporaryDirectory(prefix="workbench-nb-") as tmp:
        out = Path(tmp) / "executed.ipynb"
        try:
            pm.execute_notebook(str(notebook), str(out), parameters=parameters,
                                kernel_name="python3", progress_bar=progress,
                                execution_timeout=timeout_s, cwd=str(notebook.parent),
                                kernel_manager_class=_kernel_manager_class(Path(tmp)))
        except PapermillExecutionError as exc:
            raise WorkbenchError(f"notebook {notebook.name} failed in cell "
                                 f"{exc.exec_count}: {exc.ename}: {exc.evalue}") from None
        except DeadKernelError:
            log = Path(tmp) / "kernel.log"
            lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
            raise WorkbenchError(f"notebook {notebook.name}: the kernel died"
                                 + (f" ({lines[-1]})" if lines else "")) from None
        return nbformat.read(str(out), as_version=4)


def _resolved(name_or_path: str) -> str:
    """A model or platform file given relative to the caller's folder, made absolute (the
    notebook runs in notebooks/); zoo and preset names stay as they are."""
    path = Path(name_or_path)
    return str(path.resolve()) if path.suffix and path.exists() else name_or_path


def report_parameters(notebook: Path = REPORT_NOTEBOOK) -> tuple[str, ...]:
    """The names the notebook's `parameters` cell assigns: the only parameters it takes."""
    import ast
    import json

    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            tree = ast.parse("".join(cell["source"]))
            return tuple(t.id for node in tree.body if isinstance(node, ast.Assign)
                         for t in node.targets if isinstance(t, ast.Name))
    raise WorkbenchError(f"{notebook}: no cell tagged 'parameters'")


def _whole(low: int, high: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _number(low: float, high: float) -> Callable[[Any], bool]:
    return lambda v: (isinstance(v, int | float) and not isinstance(v, bool)
                      and math.isfinite(v) and low <= v <= high)


def _sizes(v: Any) -> bool:
    return isinstance(v, list) and 0 < len(v) <= 64 and all(
        _number(1 / 1024, 2**38)(x) and x > 0 for x in v)


def _shape(v: Any) -> bool:
    return v is None or (isinstance(v, list) and len(v) == 3
                         and all(_whole(1, 2**31)(x) for x in v))


# the rules of the notebook's parameters: (check, rule); names and modes as explore has them
_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "batch": (_whole(1, 2**20), "must be an integer in 1..2^20"),
    "memory_kb": (_number(0, 2**38), "must be a number of KB in 0..2^38 (0: the platform's)"),
    "sweep_memory_kb": (_sizes, "must be a list of 1 to 64 sizes in KB, each in 1/1024..2^38"),
    "objective": (lambda v: v in ("cycles", "energy", "accesses", "edp"),
                  "must be one of cycles, energy, accesses, edp"),
    "cores": (_whole(0, 4096), "must be an integer in 0..4096 (0: the platform's)"),
    "fusion": (lambda v: v in ("auto", "off", "force"), "must be one of auto, off, force"),
    "input_shape": (_shape, "must be [C, H, W], three positive integers (or null)"),
}


OLD_PARAMETERS = {"buffer_sizes_kb": "sweep_memory_kb"}  # old spellings still read


def check_parameters(params: dict[str, Any], origin: str = "report parameter"
                     ) -> dict[str, Any]:
    """The parameters, old spellings (`OLD_PARAMETERS`) read as the new ones with one notice;
    refuse (one line naming `origin`, the key, the rule and the value cut to 80 characters)
    any key the notebook's parameters cell does not assign, `network` and `platform` (the
    report's own arguments), and a value its rule does not allow."""
    params = spelling.renamed_keys(params, OLD_PARAMETERS, origin)
    known = report_parameters()
    own = sorted(set(params) & {"network", "platform"})
    if own:
        raise WorkbenchError(f"{origin} {own[0]}: is the report's own argument (`workbench "
                             "report NETWORK --platform PLATFORM`), not a parameter")
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise WorkbenchError(f"{origin}: report parameter(s) {cut(unknown)} unknown; "
                             "parameters: "
                             + ", ".join(k for k in known if k not in ("network", "platform")))
    for key, value in params.items():
        check, rule = _RULES.get(key, (lambda v: True, ""))
        if not check(value):
            raise WorkbenchError(f"{origin} {key}: {rule}, got {cut(value)}")
    return params


def build_report(network: str, platform: str, out: str | Path, timeout_s: int = 600,
                 progress: bool = False, **params: Any) -> Path:
    """Execute the report notebook for one network and platform and write the HTML file.
    Parameters must be names of the notebook's parameters cell (nothing else reaches it).
    `progress`: a bar of executed cells on stderr."""
    params = check_parameters(params)
    check_output_file(out, "report output")
    executed = execute(REPORT_NOTEBOOK, {"network": _resolved(network),
                                         "platform": _resolved(platform), **params}, timeout_s,
                       progress)
    return write_text(out, to_html(executed, f"{network} on {platform}"))

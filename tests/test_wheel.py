"""The package works from a wheel: built from the checkout, installed into a fresh venv outside
it, run from another folder (zoo, explore, an offline report, a notebook of the installed
package); WORKBENCH_DATA never supplies the report notebook.

The fresh venv reuses the main venv's installed dependencies through a .pth line (installing
them again would take minutes and the network); the checkout's own `workbench` is not
importable there (the editable finder is a .pth of the main venv, which a .pth path line does
not process), and every test checks that the code it runs is the wheel's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from test_viz import offline_problems

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("pyproject.toml", "README.md", "workbench", "data", "notebooks")
MARKER_CELL = ("import pathlib\npathlib.Path({path!r}).write_text('planted notebook ran')\n"
               "network = 'lenet5'\n")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the checkout (the build leaves nothing in the tree)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    for name in SHIPPED:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns(
                "__pycache__", ".ipynb_checkpoints", "*.egg-info"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(path, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(base / "dist"), str(src)],
                   check=True, capture_output=True, timeout=300)
    (found,) = (base / "dist").glob("workbench-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel; dependencies come from the main venv's site-packages."""
    env = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True,
                   timeout=120)
    python = env / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig."
                                "get_paths()['purelib'])"], check=True, text=True,
                               capture_output=True).stdout.strip())
    (site / "main_venv_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # the dependencies' data files a real install puts under the prefix: nbconvert's templates
    # (not the main venv's kernelspec, whose python would import the checkout)
    templates = Path(sys.prefix) / "share" / "jupyter" / "nbconvert"
    (env / "share" / "jupyter").mkdir(parents=True)
    (env / "share" / "jupyter" / "nbconvert").symlink_to(templates, target_is_directory=True)
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index",
                    "--ignore-installed", "-q", str(wheel)], check=True, capture_output=True,
                   timeout=300)
    return env


def run(venv: Path, *args: str, cwd: Path, env: dict | None = None,
        timeout: int = 600) -> subprocess.CompletedProcess:
    """A command of the fresh venv, run in `cwd` with nothing of the checkout on the path."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "WORKBENCH_DATA", "VIRTUAL_ENV")}
    clean["PATH"] = f"{venv / 'bin'}{os.pathsep}{clean.get('PATH', '')}"
    return subprocess.run(list(args), cwd=cwd, env=clean | (env or {}), capture_output=True,
                          text=True, timeout=timeout)


def test_the_wheel_holds_code_data_and_notebooks_and_nothing_else(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {f"workbench/data/{p.relative_to(ROOT / 'data')}" for p in (ROOT / "data").rglob("*")
            if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts}
    notebooks = {f"workbench/notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    code = {str(p.relative_to(ROOT)) for p in (ROOT / "workbench").rglob("*.py")}
    code |= {str(p.relative_to(ROOT)) for p in (ROOT / "workbench").rglob("*.h")}  # C runtime
    assert "workbench/emit/wb_dma.h" in code
    assert data and data <= names, sorted(data - names)  # every data file of the tree ships
    assert notebooks <= names and code <= names, sorted((notebooks | code) - names)
    assert "workbench/data/networks/lenet5.yaml" in names
    assert "workbench/notebooks/report.ipynb" in names
    assert {n for n in names if not n.startswith("workbench-0")} == data | notebooks | code
    assert all(not n.startswith(("tests/", "data/", "notebooks/")) for n in names)


def test_the_installed_package_is_the_wheel_and_finds_its_zoo(venv: Path, tmp_path: Path) -> None:
    probe = run(venv, "python", "-c", "import json, workbench; from workbench import paths, "
                "layers; print(json.dumps([workbench.__file__, str(paths.data_dir()), "
                "str(paths.notebooks_dir()), layers.list_networks()]))", cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    module, data, notebooks, zoo = json.loads(probe.stdout)
    for path in (module, data, notebooks):
        assert Path(path).resolve().is_relative_to(venv.resolve()), path
    assert not Path(module).resolve().is_relative_to(ROOT)
    assert {"lenet5", "vgg16", "resnet18"} <= set(zoo)  # YAML zoo and ONNX corpus

    show = run(venv, "workbench", "show", "lenet5", cwd=tmp_path)
    assert show.returncode == 0 and "conv2" in show.stdout, show.stderr
    explore = run(venv, "workbench", "--json", "explore", "lenet5", "--batch", "2",
                  cwd=tmp_path)
    assert explore.returncode == 0, explore.stderr
    assert "conv1" in explore.stdout and "inter" in explore.stdout


def _planted_data(tmp_path: Path) -> tuple[Path, Path]:
    """A WORKBENCH_DATA folder (copies of the shipped data) with report notebooks planted
    where the data folder's parent and the data folder would hold them; each would write the
    marker file if it ran. Returns (data folder, marker)."""
    marker = tmp_path / "planted_ran.txt"
    data = tmp_path / "userdata" / "data"
    shutil.copytree(ROOT / "data", data, ignore=shutil.ignore_patterns("*.py", "onnx"))
    planted = json.loads((ROOT / "notebooks" / "report.ipynb").read_text())
    for cell in planted["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = MARKER_CELL.format(path=str(marker)) + "".join(cell["source"])
    for folder in (data.parent / "notebooks", data / "notebooks"):
        folder.mkdir()
        (folder / "report.ipynb").write_text(json.dumps(planted))
    return data, marker


def test_report_offline_from_the_wheel_never_runs_a_planted_notebook(venv: Path,
                                                                     tmp_path: Path) -> None:
    data, marker = _planted_data(tmp_path)
    report = run(venv, "workbench", "report", "lenet5", "--params", "batch=2",
                 "sweep_memory_kb=[16]", "--out", "r.html", cwd=tmp_path,
                 env={"WORKBENCH_DATA": str(data)})
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text()
    assert len(page) > 100_000 and "conv2" in page
    assert offline_problems(page) == []
    assert not marker.exists()


def test_a_notebook_of_the_installed_package_runs_under_papermill(venv: Path,
                                                                  tmp_path: Path) -> None:
    script = (
        "import sys, papermill, workbench\n"
        "from jupyter_client.kernelspec import KernelSpecManager\n"
        "from workbench import paths\n"
        "print(KernelSpecManager().get_kernel_spec('python3').argv[0])\n"
        "papermill.execute_notebook(str(paths.notebooks_dir() / '01_networks.ipynb'),\n"
        "    'out.ipynb', parameters={'network': 'lenet5', 'batch': 2}, kernel_name='python3',\n"
        "    progress_bar=False)\n")
    done = run(venv, "python", "-c", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    kernel_python = Path(done.stdout.strip().splitlines()[-1])
    assert kernel_python.parent.parent.resolve() == venv.resolve()  # the kernel is the venv's
    executed = json.loads((tmp_path / "out.ipynb").read_text())
    outputs = [o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert outputs and not [o for o in outputs if o["output_type"] == "error"]
    assert "conv2" in json.dumps(outputs)

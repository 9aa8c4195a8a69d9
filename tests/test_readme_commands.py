"""Every `workbench ...` command the README and the guide pages it links for commands
(GUIDES: code spans and code blocks) show runs as written, README first, each page in its
order, in one scratch folder, with the repository's venv: exit 0 and no traceback. The files a
command names as the reader's own (`mynet.onnx`, `model.onnx`, `grid.yaml`) are put there
first; `[...]` marks optional arguments, left out. The README stays a short guide
(README_MAX_LINES), and the guides' links lead to files."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# the pages that document commands, in the order their commands run (README's sweep first:
# the guides' `--status` and `report --sweep` examples read its folder)
GUIDES = (README, ROOT / "docs" / "commands.md", ROOT / "docs" / "model.md",
          ROOT / "docs" / "hierarchy.md")
README_MAX_LINES = 200

# commands not run here, each with its reason (keep this short)
SKIP = {
    "workbench report": "names the command in prose; the README runs it with its arguments",
    "workbench report vgg16 --platform shave --params batch=8 memory_kb=64 cores=12 "
    "fusion=auto --objective energy --out vgg16.html":
        "long run (about 100 s for vgg16); tests/test_cli.py runs reports on small networks",
    "workbench traffic seed002_vgg --memory-kb 1 4 16 64 256":
        "long run (minutes: every dataflow order of 13 VGG layers at 5 sizes); "
        "tests/test_dataflow.py runs the command on a small network",
}


def readme_commands(text: str) -> list[str]:
    """The `workbench` commands of a Markdown text, in order, whitespace normalized and
    optional `[...]` parts dropped: lines of code blocks, and whole code spans."""
    found: list[tuple[int, str]] = []
    blocks = list(re.finditer(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", text, flags=re.S | re.M))
    for block in blocks:
        offset = block.start(1)
        for line in block.group(1).splitlines(keepends=True):
            if line.strip().startswith("workbench "):
                found.append((offset, line.strip()))  # a block's lines in their order
            offset += len(line)
    prose = text
    for block in reversed(blocks):  # blank the blocks out, keeping the offsets
        prose = prose[:block.start()] + " " * (block.end() - block.start()) + prose[block.end():]
    for span in re.finditer(r"`([^`]+)`", prose):
        if span.group(1).strip().startswith("workbench"):
            found.append((span.start(), span.group(1)))
    commands = []
    for _, command in sorted(found):
        command = " ".join(re.sub(r"\[[^\]]*\]", " ", command).split())
        if command == "workbench" or not command.startswith("workbench "):
            continue
        commands.append(command)
    return commands


def guide_commands() -> list[tuple[str, str]]:
    """(page, command) of every guide, in run order; a command a page repeats from an earlier
    one runs once, under the page that shows it first."""
    seen: set[str] = set()
    out = []
    for page in GUIDES:
        for command in readme_commands(page.read_text(encoding="utf-8")):
            if command not in seen:
                seen.add(command)
                out.append((page.relative_to(ROOT).as_posix(), command))
    return out


COMMANDS = guide_commands()


def _small_grid(readme: str) -> str:
    """The README's grid with one value per axis (README's own keys, so the grid format it
    documents is what runs): one network and platform, two memory sizes, one case each."""
    block = re.search(r"^[ \t]*```yaml\n(.*?)^[ \t]*```", readme, flags=re.S | re.M)
    assert block and "networks:" in block.group(1), "README lost its example grid"
    grid = yaml.safe_load(textwrap.dedent(block.group(1)))
    for key in ("networks", "platforms", "acc_bits", "traffic_models", "objectives", "fusion"):
        if key in grid:
            grid[key] = grid[key][:1]
    grid["memory_kb"] = grid["memory_kb"][:2]
    grid["overrides"] = {k: v[:1] for k, v in grid.get("overrides", {}).items()}
    grid.pop("weights", None)  # the quantization search per case is the long part
    return yaml.safe_dump(grid)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch folder with the reader's own files the README names."""
    sys.path.insert(0, str(Path(__file__).parent))
    from model_files import LENET5, LENET5_NAMES, write_onnx
    from qdq_models import qdq_net

    work = tmp_path_factory.mktemp("readme")
    write_onnx(work / "mynet.onnx", LENET5, LENET5_NAMES, (1, 28, 28), batch=1)
    qdq_net(work / "model.onnx", np.random.default_rng(0))
    (work / "grid.yaml").write_text(_small_grid(README.read_text(encoding="utf-8")))
    return work


def _environment(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["WORKBENCH_CACHE_DIR"] = str(work / ".cache")
    env.pop("DASK_SCHEDULER_ADDRESS", None)  # the README's sweep runs its own cluster
    return env


def test_the_readme_shows_the_commands_it_should() -> None:
    """The extraction sees every command group in the README itself (a README edit that hides
    them fails here), and every skipped command is still in a guide (no stale reasons)."""
    readme = [c for page, c in COMMANDS if page == "README.md"]
    groups = {c.split()[1] for c in readme}
    assert {"networks", "show", "platforms", "explore", "quantize", "sweep", "report", "simd",
            "traffic", "hierarchy"} <= groups
    assert set(SKIP) <= {c for _, c in COMMANDS}, set(SKIP) - {c for _, c in COMMANDS}
    assert not set(SKIP) & set(readme)  # every command of the README itself runs here
    assert readme_commands("x `workbench show a [--batch 2]` y\n```\nworkbench networks\n```\n"
                           "`workbench`") == ["workbench show a", "workbench networks"]
    assert readme_commands("```\nworkbench sweep g.yaml\nworkbench report --sweep s\n```\n") \
        == ["workbench sweep g.yaml", "workbench report --sweep s"]  # a block's own order


def test_the_readme_is_a_short_guide() -> None:
    """It fits README_MAX_LINES (tests/test_packaging.py checks that it opens with the two
    setup commands), and every relative link of a guide names a file of the repository."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES, len(text.splitlines())
    for page in GUIDES:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).is_file(), (page.name, target)


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{p}:{c}" for p, c in COMMANDS])
def test_readme_command_runs(page: str, command: str, workdir: Path) -> None:
    if command in SKIP:
        pytest.skip(SKIP[command])
    argv = shlex.split(command)
    argv[0] = str(Path(sys.executable).parent / "workbench")  # the venv's entry point
    start = time.perf_counter()
    run = subprocess.run(argv, cwd=workdir, env=_environment(workdir), capture_output=True,
                         text=True, timeout=300, stdin=subprocess.DEVNULL)
    took = time.perf_counter() - start
    assert run.returncode == 0, f"{command}: exit {run.returncode}\n{run.stderr[-2000:]}"
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.stderr
    assert run.stdout.strip(), f"{command}: printed nothing"
    print(f"{page}: {command}: {took:.1f} s")

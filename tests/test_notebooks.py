"""Every notebook runs under papermill with small parameters, and is committed clean."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from test_viz import offline_problems

from workbench.report.notebook import execute

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SMALL = {
    "01_networks.ipynb": {"network": "alexnet_oxford102", "batch": 2},
    "02_quantization.ipynb": {"search_images": 100, "test_images": 200, "widths": [16]},
    "03_tile_explorer.ipynb": {"network": "lenet5", "layer": "fc4", "batch": 2},
    "04_platform_sweep.ipynb": {"memory_kb": [16, 128], "acc_bits": [16], "lanes": [32],
                                "batch": 2, "traffic_models": ["seed000", "dataflow"]},
    "05_simd_mapping.ipynb": {"network": "lenet5", "layer": "fc4", "batch": 2,
                              "tile": [1, 1, 10, 2, 512], "codegen_layer": "L4"},
    "06_traffic_models.ipynb": {"network": "lenet5", "memory_kb": [1, 16],
                                "models": ["dataflow", "peemen"]},
    "07_design_space.ipynb": {"network": "lenet5", "batch": 2, "objective": "energy",
                              "memory_kb": 16},
    "08_memory_hierarchy.ipynb": {"network": "lenet5", "platform": "seed001_3level",
                                  "grid_kb": [1, 4, 16],
                                  "budget_kb": 16, "seed_layers": ["conv3"],
                                  "seed_outer_kb": [256], "seed_inner_kb": [1],
                                  "prefetch": False},  # workers: test_hierarchy_prefetch.py
    "09_sweep_results.ipynb": {"sweep_dir": None, "x": "time_ms", "y": "throughput_gops",
                               "color": "objective"},  # None: the 20-case demo sweep
    "10_multicore.ipynb": {"network": "lenet5", "layer": "conv2", "cores": 4,
                           "seed004_cores": 3, "yang_layers": ["conv3", "fc1"],
                           "yang_cores": 4},
    "11_levels_and_cores.ipynb": {"network": "lenet5", "layer": "conv1"},
    "report.ipynb": {"network": "lenet5", "batch": 2, "sweep_memory_kb": [4, 64]},
}


def test_every_notebook_is_listed() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(SMALL)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_notebook_is_clean_and_parameterized(name: str) -> None:
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert book.cells[0].cell_type == "markdown" and "**" in book.cells[0].source  # question
    # and how long it takes (docs/measurements.md: measured on the defaults)
    assert re.search(r"^\*Run time:\* about \d+ (s|min)", book.cells[0].source, flags=re.M)
    for seed in sorted(set(re.findall(r"seed (00\d)", book.cells[0].source.lower()))):
        assert f"seed {seed} = " in book.cells[0].source, (name, seed)  # defined where cited
    tagged = [c for c in book.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    code = [c for c in book.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)  # stripped
    assert not any("def " in c.source for c in code)  # logic lives in workbench/
    # no later cell rebinds a parameter: re-running a cell after "Run All" sees the parameters
    # as set (notebook 08's seed cell once rebound `datapath`, failing the app cell re-run)
    parameters = _bound(tagged[0].source)
    for cell in code:
        if cell is not tagged[0]:
            assert not _bound(cell.source) & parameters, (name, _bound(cell.source) & parameters)


def _bound(source: str) -> set[str]:
    """The names a cell's code binds (assignments, for loops, imports, with ... as)."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


@pytest.mark.parametrize("name", sorted(SMALL))
def test_notebook_executes(name: str) -> None:
    executed = execute(NOTEBOOKS / name, SMALL[name], timeout_s=600)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert outputs and not any(o.get("output_type") == "error" for o in outputs)
    assert offline_problems(nbformat.writes(executed)) == []  # BokehJS inline, no URL in it


def test_bad_input_in_a_notebook_is_one_line(tmp_path: Path) -> None:
    import papermill as pm

    out = tmp_path / "out.ipynb"
    with pytest.raises(pm.PapermillExecutionError):
        pm.execute_notebook(str(NOTEBOOKS / "05_simd_mapping.ipynb"), str(out),
                            parameters={"tile": [99, 1, 1, 1, 1]}, kernel_name="python3",
                            progress_bar=False, cwd=str(NOTEBOOKS))
    book = nbformat.read(out, as_version=4)
    texts = [o.get("text", "") + "".join(o.get("traceback", []))
             for c in book.cells if c.cell_type == "code" for o in c.outputs]
    shown = "".join(texts)
    assert "workbench error: layer 'conv1': tile TOx=99 must be an integer in 1..28" in shown
    assert "Traceback" not in shown and "File " not in shown

"""`workbench hierarchy NETWORK --levels FILE.yaml`: every conv/fc layer's minimum-energy
blocking on a memory hierarchy (seed 001), with per-level accesses and energy and the
memory:compute energy ratio; with --budget-kb, the hierarchy co-designed within that on-chip
capacity (`workbench.hierarchy.codesign`, exact over the grid of level sizes printed).

Levels with `energy_pj: null` take their access energy from their size (seed 001 table 3)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from workbench import layers
from workbench.cli.args import positive_int
from workbench.errors import WorkbenchError
from workbench.hierarchy import ElementBytes, Hierarchy, hierarchy_from_dict
from workbench.hierarchy.codesign import (
    Codesigner,
    Design,
    codesign,
    space_around,
    table3_energy_pj,
)
from workbench.layers.zoo import read_yaml
from workbench.paths import data_file, data_files
from workbench.viz import units

KB = 1024


def load_hierarchy(path: str) -> Hierarchy:
    """A hierarchy from a YAML file ({name?, mac_energy_pj?, levels: [...]}, DRAM first), or
    a shipped one by name (data/hierarchies/<name>.yaml)."""
    shipped = data_file("hierarchies", f"{path}.yaml")
    if not Path(path).exists() and shipped.exists():
        path = str(shipped)
    elif not Path(path).exists():
        names = ", ".join(p.stem for p in data_files("hierarchies", "*.yaml"))
        raise WorkbenchError(f"--levels {path!r}: no such file or shipped hierarchy "
                             f"(shipped: {names})")
    return hierarchy_from_dict(read_yaml(path, "hierarchy"), path)


def default_sizes_kb(budget_kb: float) -> list[int]:
    """Powers of two from 1 KB up to the budget (KB)."""
    if budget_kb <= 0:
        raise WorkbenchError(f"--budget-kb must be > 0, got {budget_kb:g}")
    sizes, kb = [], 1
    while kb <= budget_kb:
        sizes.append(kb)
        kb *= 2
    if not sizes:
        raise WorkbenchError(f"--budget-kb {budget_kb:g} is below the smallest size, 1 KB")
    return sizes


def design_summary(design: Design) -> dict:
    """One design as plain data: hierarchy, on-chip KB, energies (pJ), memory:compute."""
    return {"hierarchy": design.hierarchy.name, "on_chip_kb": design.capacity_bytes / KB,
            "energy_pj": design.energy_pj, "mac_energy_pj": design.mac_energy_pj,
            "memory_to_compute": design.memory_to_compute,
            "blockings": [b.describe() for b in design.blockings],
            "tiles": [[list(t) for t in b.tiles] for b in design.blockings]}


def run(network: str, levels_file: str, budget_kb: float | None = None,
        sizes_kb: Sequence[int] | None = None, batch: int | None = None,
        elem_bytes: int = 2, psum_bytes: int = 4) -> dict:
    """The command's result as one document: rows (per layer and level), the design on the
    given hierarchy and, with a budget, the co-designed one and the Pareto front."""
    net = layers.load_network(network, batch=batch)
    tiled = tuple(net.tiled_layers())
    hierarchy = load_hierarchy(levels_file)
    precision = ElementBytes(elem_bytes, elem_bytes, elem_bytes, psum_bytes)
    designer = Codesigner(tiled, precision, table3_energy_pj)
    given = designer.design(hierarchy)
    if given is None:
        raise WorkbenchError(f"some layer of {net.name!r} fits no blocking on "
                             f"{hierarchy.name!r}")
    doc = {"network": net.name, "given": design_summary(given),
           "rows": designer.traffic_rows(given)}
    if budget_kb is not None:
        sizes = list(sizes_kb) if sizes_kb else default_sizes_kb(budget_kb)
        space = space_around(hierarchy, [s * KB for s in sizes])
        result = codesign(tiled, space, budget=budget_kb * KB, designer=designer)
        if result.best is None:
            raise WorkbenchError(f"no hierarchy of the grid within {budget_kb:g} KB fits "
                                 "every layer")
        doc["codesign"] = {"budget_kb": budget_kb, "sizes_kb": sizes,
                           "hierarchies": len(result.designs),
                           "best": design_summary(result.best),
                           "rows": designer.traffic_rows(result.best),
                           "pareto": [design_summary(d) for d in result.pareto]}
    return doc


def rows_table(rows: list[dict]) -> pd.DataFrame:
    """Per layer and level: accesses (elements) and energy (pJ, pJ/MAC)."""
    table = pd.DataFrame(rows)
    return table.rename(columns={"O_partial": "O partial", "O_final": "O final",
                                 "energy_pj": "energy pJ", "pj_per_mac": "pJ/MAC"})


def _print_design(title: str, design: dict, rows: list[dict]) -> None:
    print(f"{title}: {design['hierarchy']} ({design['on_chip_kb']:g} KB on chip), "
          f"{design['energy_pj'] / 1e6:.3f} µJ, memory:compute "
          f"{design['memory_to_compute']:.2f}×")
    table = rows_table(rows)
    for col in table.columns:  # readable numbers: separators, never an exponent
        if pd.api.types.is_integer_dtype(table[col]):
            table[col] = table[col].map(units.fmt_count)
        elif pd.api.types.is_float_dtype(table[col]):
            table[col] = table[col].map(lambda v: units.fmt_number(v, 4))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False))


def cmd_hierarchy(args: argparse.Namespace) -> None:
    doc = run(args.network, args.levels, args.budget_kb, args.sizes_kb, args.batch,
              args.elem_bytes, args.psum_bytes)
    if getattr(args, "json", False):
        print(json.dumps(doc, indent=1))
        return
    _print_design(f"{doc['network']} on the given hierarchy", doc["given"], doc["rows"])
    if "codesign" in doc:
        co = doc["codesign"]
        print()
        _print_design(f"co-designed within {co['budget_kb']:g} KB ({co['hierarchies']} "
                      f"hierarchies, level sizes {co['sizes_kb']} KB)", co["best"], co["rows"])
        print("\nPareto front (on-chip KB, µJ): " + ", ".join(
            f"{d['on_chip_kb']:g} KB {d['energy_pj'] / 1e6:.3f}" for d in co["pareto"]))


def register(subparsers: argparse._SubParsersAction,
             common: argparse.ArgumentParser | None = None) -> None:
    """Add the `hierarchy` command (with the shared --json/--strict parent when given)."""
    p = subparsers.add_parser("hierarchy", parents=[common] if common else [],
                              help="per-level traffic and energy on a memory hierarchy; "
                                   "co-design within a budget")
    p.add_argument("network", help="zoo name or a .yaml/.onnx/.prototxt file")
    p.add_argument("--levels", required=True, metavar="FILE.yaml",
                   help="hierarchy file: levels from DRAM inwards")
    p.add_argument("--budget-kb", type=float, default=None,
                   help="co-design the level sizes within this on-chip capacity (KB)")
    p.add_argument("--sizes-kb", type=positive_int, nargs="+", default=None,
                   help="candidate level sizes (KB; default powers of two up to the budget)")
    p.add_argument("--batch", type=positive_int, default=None, help="images per batch (On)")
    p.add_argument("--elem-bytes", type=positive_int, default=2, help="bytes per element")
    p.add_argument("--psum-bytes", type=positive_int, default=4, help="bytes per partial sum")
    if common is None:
        p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=cmd_hierarchy)

"""The chosen mapping exported for a paper or another tool: a network plan's rows (or a layer's
best tiles) as CSV, and as YAML with the network, objective and whole platform.

A plan's row: layer, kind, cores, split, schedule; the mapping (the seed 000 tile
TOx×TOy×TOc×TOn×TKc, or on a platform with levels the block X×Y×C×M×N of each on-chip level
and the loop order); bound; cycles, energy (pJ), DRAM accesses (elements) and traffic (bytes),
DMA transfers, footprint (bytes) and, with levels, each level's accesses and energy. Numbers are
written whole (counts) or as Python writes floats, so a CSV read back gives the plan's values."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import yaml

from workbench import platforms
from workbench.designs.session import platform_doc
from workbench.layers.dims import seed000_columns
from workbench.numbers import fmt_tile

TILE_DIMS = seed000_columns()
COUNTS = ("ext_accesses", "dma_transfers", "footprint_bytes")
TILE_COLUMNS = ("schedule", *TILE_DIMS, "footprint_bytes", "cycles", "energy_pj",
                "ext_accesses", "dma_transfers")


def _blocks(row: dict[str, Any], inner_first: list[str]) -> dict[str, str]:
    """blocks_<level> of a levels row ('tiles' holds them innermost first, ' | ' between)."""
    parts = row["tiles"].split(" | ") if isinstance(row.get("tiles"), str) else []
    if len(parts) != len(inner_first):
        return {f"blocks_{name}": "" for name in inner_first}
    return {f"blocks_{name}": part for name, part in zip(inner_first, parts, strict=True)}


def mapping_rows(plan: pd.DataFrame, plat: platforms.Platform) -> pd.DataFrame:
    """The plan's rows as exported (see the module); one row per layer, in the plan's order."""
    names = [level.name for level in plat.memory.levels]
    inner_first = names[:0:-1]
    levels = "tiles" in plan and plan["tiles"].notna().any()
    rows = []
    for row in plan.to_dict("records"):
        out: dict[str, Any] = {"layer": row["layer"], "kind": row.get("role", row["kind"]),
                               "cores": int(row["cores"]), "split": row["split"],
                               "schedule": row["schedule"]}
        if levels:
            out |= _blocks(row, inner_first)
            out["order"] = row["blocking"] if isinstance(row.get("blocking"), str) else ""
        else:
            has_tile = all(d in row and pd.notna(row[d]) for d in TILE_DIMS)
            out["tile"] = fmt_tile(row[d] for d in TILE_DIMS) if has_tile else ""
        out |= {"bound": row["bound"], "cycles": float(row["cycles"]),
                "energy_pj": float(row["energy_pj"]),
                **{c: int(row[c]) for c in COUNTS},
                "traffic_bytes": int(row["ext_accesses"]) * plat.elem_bytes}
        for name in names:
            for head in ("accesses_", "energy_pj_"):
                if f"{head}{name}" in row:
                    out[f"{head}{name}"] = float(row[f"{head}{name}"])
        rows.append(out)
    return pd.DataFrame(rows)


def _plain(value: Any) -> Any:
    """NumPy scalars as Python numbers, NaN as None (YAML's null)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _yaml(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def mapping_csv(plan: pd.DataFrame, plat: platforms.Platform) -> str:
    """The plan's rows as CSV text (a header line, then a line per layer)."""
    return mapping_rows(plan, plat).to_csv(index=False, lineterminator="\n")


def mapping_yaml(plan: pd.DataFrame, plat: platforms.Platform, network: str,
                 objective: str) -> str:
    """The plan as YAML: network, objective, the platform (as a platform file writes it) and
    the rows of `mapping_rows`."""
    rows = [{k: _plain(v) for k, v in r.items()}
            for r in mapping_rows(plan, plat).to_dict("records")]
    return _yaml({"network": network, "objective": objective,
                  "platform": platform_doc(plat), "layers": rows})


def tiles_rows(solutions: pd.DataFrame) -> pd.DataFrame:
    """A layer's solutions (the tile explorer's) as exported: schedule, tile, footprint,
    cycles, energy, accesses, DMA transfers."""
    out = solutions.loc[:, list(TILE_COLUMNS)].reset_index(drop=True)
    for column in (*TILE_DIMS, *COUNTS):
        out[column] = out[column].astype("int64")
    return out


def tiles_csv(solutions: pd.DataFrame) -> str:
    return tiles_rows(solutions).to_csv(index=False, lineterminator="\n")


def tile_yaml(row: pd.Series, layer: str, network: str, plat: platforms.Platform,
              objective: str) -> str:
    """One layer's chosen tile as YAML, with the network, objective and platform."""
    chosen = {k: _plain(v) for k, v in tiles_rows(row.to_frame().T).iloc[0].items()}
    return _yaml({"network": network, "layer": layer, "objective": objective,
                  "platform": platform_doc(plat), "mapping": chosen})

"""Two designs side by side: a pinned network plan and the current one (another platform or
objective), layer by layer. Per layer: cycles, energy (pJ) and DRAM traffic (bytes: the
external accesses times each platform's element size) of both, and the change (current minus
pinned). Layers are matched by name, in the current plan's order (a layer only one plan has
shows n/a on the other side)."""

from __future__ import annotations

import pandas as pd

from workbench import platforms
from workbench.numbers import NA, finite, fmt_count, fmt_energy, fmt_percent, fmt_traffic

QUANTITIES = {"cycles": fmt_count, "energy_pj": fmt_energy, "traffic_bytes": fmt_traffic}
HEADERS = {"cycles": "cycles", "energy_pj": "energy", "traffic_bytes": "DRAM traffic"}


def _per_layer(plan: pd.DataFrame, plat: platforms.Platform) -> pd.DataFrame:
    return pd.DataFrame({"layer": plan["layer"].astype(str).to_numpy(),
                         "cycles": plan["cycles"].astype(float).to_numpy(),
                         "energy_pj": plan["energy_pj"].astype(float).to_numpy(),
                         "traffic_bytes": (plan["ext_accesses"].astype(float)
                                           * plat.elem_bytes).to_numpy()})


def compare_plans(pinned: pd.DataFrame, pinned_platform: platforms.Platform,
                  current: pd.DataFrame, current_platform: platforms.Platform) -> pd.DataFrame:
    """Per layer: <quantity>_pinned, <quantity>_current and <quantity>_change for cycles,
    energy_pj and traffic_bytes; a last row 'total' sums each column."""
    a = _per_layer(pinned, pinned_platform)
    b = _per_layer(current, current_platform)
    order = list(b["layer"]) + [n for n in a["layer"] if n not in set(b["layer"])]
    both = (a.set_index("layer").add_suffix("_pinned")
            .join(b.set_index("layer").add_suffix("_current"), how="outer")
            .reindex(order))
    for q in QUANTITIES:
        both[f"{q}_change"] = both[f"{q}_current"] - both[f"{q}_pinned"]
    total = both.sum(numeric_only=True, min_count=1)
    both.loc["total"] = total
    both.index.name = "layer"
    return both.reset_index()


def _change(value: float, before: float, fmt) -> str:
    """'+1,234 (+12%)', '−56.0 nJ (−3%)', '0' or n/a."""
    if not finite(value):
        return NA
    if value == 0:
        return "0"
    sign = "+" if value > 0 else "−"
    share = f" ({sign}{fmt_percent(abs(value) / before)})" if finite(before) and before else ""
    return f"{sign}{fmt(abs(value))}{share}"


def compare_table(compared: pd.DataFrame, energy_known: bool = True) -> pd.DataFrame:
    """The comparison in human units: per quantity its pinned, current and change columns."""
    table = {"layer": list(compared["layer"])}
    for q, fmt in QUANTITIES.items():
        shown = (lambda v: fmt_energy(v, energy_known)) if q == "energy_pj" else fmt
        name = HEADERS[q]
        table[f"{name} pinned"] = [shown(v) for v in compared[f"{q}_pinned"]]
        table[f"{name} now"] = [shown(v) for v in compared[f"{q}_current"]]
        table[f"{name} change"] = [
            _change(c, p, shown) if q != "energy_pj" or energy_known else NA
            for c, p in zip(compared[f"{q}_change"], compared[f"{q}_pinned"], strict=True)]
    return pd.DataFrame(table)

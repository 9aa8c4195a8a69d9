"""A network on a memory hierarchy: every conv/fc layer's minimum-energy blocking
(`hierarchy.search.search`, exact over its space S), priced by `hierarchy.accesses.evaluate`:
per-level accesses (elements) and energy (pJ), MAC energy, memory:compute energy ratio and,
where the evaluation has a cycle model (`HierarchyResult.timing`), cycles and what bounds them.

The hierarchy comes from a platform (`Platform.hierarchy`: its declared `levels:`, or the
implied DRAM + local memory; elements at the platform's input/weight widths, partial sums at
its accumulator width) or is given directly (default widths 2 B data, 4 B partial sums, as
`workbench hierarchy`). On-chip levels with `energy_pj: null` are priced by size through seed
001 table 3 (`codesign.table3_energy_pj`). Energies in the table are `evaluate`'s (with the
hierarchy's datapath when it has one). Each (layer, hierarchy, widths) is searched once per
`memo.Caches` passed in (`layer_plan`: an app's, a command's, a sweep batch's); results
searched elsewhere (the CLI's worker processes) are handed over by `remember`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from workbench.explore.search_store import SearchStore, search_key
from workbench.hierarchy.accesses import ElementBytes, HierarchyResult, PrecisionLike
from workbench.hierarchy.accesses import evaluate as evaluate_blocking
from workbench.hierarchy.codesign import table3_energy_pj, traffic_rows
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.levels import Hierarchy, SizeEnergy, hierarchy_from_dict
from workbench.hierarchy.search import SearchResult, search
from workbench.layers.network import Network
from workbench.layers.spec import ConvLayer
from workbench.memo import Caches, caches_or_new
from workbench.platforms import Platform, read_hierarchy

DEFAULT_PRECISION = ElementBytes(2, 2, 2, 4)  # bytes: 16-bit data, 32-bit partial sums
SIZE_ENERGY: SizeEnergy = table3_energy_pj
Target = Platform | Hierarchy


@dataclass(frozen=True, slots=True)
class LayerPlan:
    """One layer's best blocking on a hierarchy (`found`) and its evaluation (`result`)."""

    layer: ConvLayer
    found: SearchResult
    result: HierarchyResult

    @property
    def cycles(self) -> float | None:
        """Cycles of the evaluation's cycle model (None when it has none)."""
        return getattr(self.result, "cycles", None)


PLANS_KEPT = 2048  # layer plans a session keeps


class PlanMemo:
    """A session's layer plans (one per `memo.Caches`): the plans made, at most PLANS_KEPT,
    and the search results handed over (`remember`), taken by `layer_plan` once.
    Thread-safe."""

    def __init__(self) -> None:
        self.plans: OrderedDict[tuple, LayerPlan] = OrderedDict()
        self.found: dict[tuple, SearchResult] = {}
        self.lock = threading.Lock()

    @classmethod
    def of(cls, caches: Caches) -> PlanMemo:
        return caches.store("hierarchy plans", cls)


def layer_plan(layer: ConvLayer, hierarchy: Hierarchy,
               precision: PrecisionLike = DEFAULT_PRECISION,
               size_energy: SizeEnergy | None = SIZE_ENERGY,
               caches: Caches | None = None, bypass: bool = True) -> LayerPlan:
    """The layer's minimum-energy blocking and its evaluation (NoFitError when no blocking
    fits), kept in `caches` (none: for this call); searched (with those caches) unless
    `remember`ed. bypass=False: every level holds every array it can (`search`)."""
    caches = caches_or_new(caches)
    memo = PlanMemo.of(caches)
    key = (layer, hierarchy, precision, size_energy) + (() if bypass else (False,))
    with memo.lock:
        plan = memo.plans.get(key)
        found = None if plan is not None else memo.found.pop(key, None)
    if plan is not None:
        return plan
    if found is None:
        found = _stored_or_searched(layer, hierarchy, precision, size_energy, bypass, caches)
    plan = LayerPlan(layer, found, evaluate_blocking(layer, found.blocking, hierarchy,
                                                     precision, size_energy))
    with memo.lock:
        memo.plans[key] = plan
        while len(memo.plans) > PLANS_KEPT:
            memo.plans.popitem(last=False)
    return plan


def _stored_or_searched(layer: ConvLayer, hierarchy: Hierarchy, precision: PrecisionLike,
                        size_energy: SizeEnergy | None, bypass: bool,
                        caches: Caches) -> SearchResult:
    """The search's answer from the disk (`search_store`), else searched and stored."""
    store = SearchStore.of(caches)
    key = search_key(layer, hierarchy, precision, size_energy, bypass)
    found = None if key is None else store.load(key)
    if found is not None:
        return found
    found = search(layer, hierarchy, precision, size_energy, bypass=bypass, caches=caches)
    if key is not None:
        store.save(key, found)
    return found


def remember(layer: ConvLayer, hierarchy: Hierarchy, precision: PrecisionLike,
             size_energy: SizeEnergy | None, found: SearchResult, caches: Caches) -> None:
    """Give `layer_plan` (with these `caches`) the layer's `search` result found elsewhere
    (e.g. by a `Codesigner`, in worker processes), so that it is not searched again; a plan
    already made is kept."""
    memo = PlanMemo.of(caches)
    with memo.lock:
        memo.found[layer, hierarchy, precision, size_energy] = found


def platform_precision(plat: Platform) -> ElementBytes:
    """Bytes per element on a platform: inputs and outputs at in_bits, weights at w_bits,
    partial sums at acc_bits."""
    return ElementBytes(plat.in_bits / 8, plat.w_bits / 8, plat.in_bits / 8, plat.acc_bits / 8)


@functools.lru_cache(maxsize=256)
def platform_hierarchy(plat: Platform) -> Hierarchy:
    """The platform's memory hierarchy (`Platform.hierarchy_doc`: its declared levels, or
    DRAM + local memory), parsed by `hierarchy_from_dict`. When it describes no MAC array (no
    `datapath:`, or no levels at all) the hierarchy feeds an array of the platform's
    macs_per_cycle whose mapping is not modelled (`Datapath.ideal_macs_per_cycle`: one operand
    fetch per MAC, as the seed 000 model counts local accesses; compute cycles MACs /
    macs_per_cycle at its clock, as the performance model's)."""
    hierarchy = hierarchy_from_dict(plat.hierarchy_doc, f"platform {plat.name!r}")
    if hierarchy.datapath is not None:
        return hierarchy
    return dataclasses.replace(hierarchy, datapath=Datapath(
        clock_mhz=plat.clock_mhz, ideal_macs_per_cycle=plat.macs_per_cycle))


def load_hierarchy(name_or_path: str) -> Hierarchy:
    """A hierarchy file, or a shipped one by name (data/hierarchies/<name>.yaml)."""
    doc, path = read_hierarchy(name_or_path)
    return hierarchy_from_dict(doc, path)


def resolve(target: Target, precision: PrecisionLike | None = None
            ) -> tuple[Hierarchy, PrecisionLike]:
    """(hierarchy, element widths) of a platform or a hierarchy."""
    if isinstance(target, Platform):
        widths = platform_precision(target) if precision is None else precision
        return platform_hierarchy(target), widths
    if isinstance(target, Hierarchy):
        return target, DEFAULT_PRECISION if precision is None else precision
    raise TypeError(f"expected a Platform or a Hierarchy, got {type(target).__name__}")


def _tiled(network: Network | Iterable[ConvLayer]) -> list[ConvLayer]:
    return network.tiled_layers() if isinstance(network, Network) else list(network)


def layer_plans(network: Network | Iterable[ConvLayer], target: Target,
                precision: PrecisionLike | None = None,
                size_energy: SizeEnergy | None = SIZE_ENERGY,
                caches: Caches | None = None) -> list[LayerPlan]:
    """`layer_plan` of every conv/fc layer, in network order (`caches`: what the plans and
    their searches keep; none: for this call)."""
    hierarchy, widths = resolve(target, precision)
    caches = caches_or_new(caches)
    return [layer_plan(layer, hierarchy, widths, size_energy, caches)
            for layer in _tiled(network)]


def level_column(level: str) -> str:
    """The plan's column of one level's energy (pJ)."""
    return f"energy_pj_{level}"


def _row(plan: LayerPlan, hierarchy: Hierarchy) -> dict[str, Any]:
    energy = plan.result.energy_pj
    mac = energy["mac"]
    memory = sum(energy[level.name] for level in hierarchy.levels)
    row: dict[str, Any] = {
        "layer": plan.layer.name, "kind": plan.layer.kind, "macs": plan.layer.macs,
        "blocking": plan.found.blocking.describe(),
        "tiles": " | ".join("×".join(map(str, t)) for t in plan.found.blocking.tiles),
        "energy_pj": memory + mac, "mac_energy_pj": mac, "memory_energy_pj": memory,
        "memory_to_compute": memory / mac if mac else math.inf,
        "pj_per_mac": (memory + mac) / plan.layer.macs}
    for level, acc in zip(hierarchy.levels, plan.result.accesses, strict=True):
        row[level_column(level.name)] = energy[level.name]
        row[f"accesses_{level.name}"] = acc.total()
    row["fits"] = plan.result.fits
    if plan.cycles is not None:
        row["cycles"] = float(plan.cycles)
        row["bound"] = plan.result.bound
        row["array_use"] = array_use(plan, hierarchy)
    return row


def array_use(plan: LayerPlan, hierarchy: Hierarchy) -> float:
    """Useful MACs over the MAC array's slots in its compute cycles (0 … 1): lanes idle where
    a block does not fill the unrolled dimensions, and padded blocks."""
    dp = hierarchy.datapath
    lanes = 1 if dp is None else (dp.ideal_macs_per_cycle or dp.macs_per_step)
    return plan.layer.macs / (plan.result.timing.compute_cycles * lanes)


def hierarchy_plan(network: Network | Iterable[ConvLayer], target: Target,
                   precision: PrecisionLike | None = None,
                   size_energy: SizeEnergy | None = SIZE_ENERGY,
                   caches: Caches | None = None) -> pd.DataFrame:
    """One row per conv/fc layer (`caches`: as `layer_plans`): layer, kind, macs, blocking,
    tiles (X×Y×C×M×N blocks t_0 | … | t_{L−1} the loop groups step over, innermost first),
    energy_pj (memory + MAC),
    mac_energy_pj, memory_energy_pj, memory_to_compute, pj_per_mac, energy_pj_<level> and
    accesses_<level> (elements, reads + writes) per level DRAM first, fits, and with a cycle
    model cycles, bound and array_use (`array_use`). attrs: hierarchy (name), levels (names,
    DRAM first), clock_mhz (None: unknown)."""
    hierarchy, widths = resolve(target, precision)
    rows = [_row(plan, hierarchy) for plan in layer_plans(network, hierarchy, widths,
                                                          size_energy, caches)]
    frame = pd.DataFrame(rows)
    clock = hierarchy.datapath.clock_mhz if hierarchy.datapath is not None else None
    frame.attrs.update(hierarchy=hierarchy.name, levels=[lvl.name for lvl in hierarchy.levels],
                       clock_mhz=clock)
    return frame


def hierarchy_totals(plan: pd.DataFrame) -> dict[str, Any]:
    """Network totals of a `hierarchy_plan`: energy_pj, mac_energy_pj, memory_energy_pj,
    memory_to_compute, energy_pj_<level> per level and, with cycles, cycles (the layers run
    one after the other) and time_ms at the datapath's clock when it is known."""
    mac, memory = float(plan["mac_energy_pj"].sum()), float(plan["memory_energy_pj"].sum())
    out: dict[str, Any] = {"hierarchy": plan.attrs.get("hierarchy"), "energy_pj": mac + memory,
                           "mac_energy_pj": mac, "memory_energy_pj": memory,
                           "memory_to_compute": memory / mac if mac else math.inf}
    for level in plan.attrs.get("levels", []):
        out[level_column(level)] = float(plan[level_column(level)].sum())
    if "cycles" in plan:
        out["cycles"] = float(plan["cycles"].sum())
        clock = plan.attrs.get("clock_mhz")
        if clock:
            out["time_ms"] = out["cycles"] / (clock * 1e3)
    return out


def hierarchy_traffic(network: Network | Iterable[ConvLayer], target: Target,
                      precision: PrecisionLike | None = None,
                      size_energy: SizeEnergy | None = SIZE_ENERGY,
                      caches: Caches | None = None) -> list[dict[str, Any]]:
    """Per layer and level (DRAM first, then 'MAC'): element accesses (reads + writes) by kind
    I, W, O_partial, O_final, energy_pj and pj_per_mac (the `workbench hierarchy` rows;
    `caches`: as `layer_plans`)."""
    hierarchy, widths = resolve(target, precision)
    rows: list[dict[str, Any]] = []
    for plan in layer_plans(network, hierarchy, widths, size_energy, caches):
        rows += traffic_rows(plan.layer, plan.result, hierarchy)
    return rows

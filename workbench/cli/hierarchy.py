"""`workbench hierarchy NETWORK --levels FILE.yaml | --platform NAME|FILE`: every conv/fc
layer's minimum-energy blocking on a memory hierarchy (seed 001), with per-level accesses and
energy, the memory:compute energy ratio and, where the model has them, cycles
(`workbench.explore.hierarchy_plan`); with --budget-kb, the hierarchy co-designed within that
on-chip capacity (`workbench.hierarchy.codesign`, exact over the grid of level sizes printed).

Levels with `energy_pj: null` take their access energy from their size (seed 001 table 3).
A platform gives its declared `levels:` (or DRAM + its local memory) and its element widths
(inputs/weights at in_bits/w_bits, partial sums at acc_bits) unless --elem-bytes/--psum-bytes
say otherwise; a hierarchy file defaults to 2-byte elements and 4-byte partial sums."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pandas as pd
from tqdm import tqdm

from workbench import layers, platforms, spelling
from workbench.cli.args import Renamed, non_negative_int, positive_int, positive_number
from workbench.cli.tables import print_table, print_text
from workbench.errors import UnknownNameError, WorkbenchError
from workbench.explore import hierarchy_plan as plan
from workbench.hierarchy import Blocking, ElementBytes, Hierarchy, interrupt
from workbench.hierarchy.blocking import padding
from workbench.hierarchy.codesign import (
    Codesigner,
    Design,
    codesign,
    on_chip_bytes,
    space_around,
)
from workbench.hierarchy.prefetch import Prefetcher
from workbench.hierarchy.search import NoFitError
from workbench.layers.spec import regular_connections
from workbench.viz import units

KB = 1024


def load_hierarchy(path: str) -> Hierarchy:
    """A hierarchy from a YAML file ({name?, mac_energy_pj?, levels: [...]}, DRAM first), or
    a shipped one by name (data/hierarchies/<name>.yaml)."""
    try:
        return plan.load_hierarchy(path)
    except UnknownNameError:
        names = ", ".join(platforms.list_hierarchies())
        raise WorkbenchError(f"--levels {path!r}: no such file or shipped hierarchy "
                             f"(shipped: {names})") from None


def default_memory_kb(budget_kb: float) -> list[int]:
    """Powers of two from 1 KB up to the budget (KB)."""
    if not (math.isfinite(budget_kb) and budget_kb > 0):
        raise WorkbenchError(f"--budget-kb must be a finite number > 0, got {budget_kb:g}")
    sizes, kb = [], 1
    while kb <= budget_kb:
        sizes.append(kb)
        kb *= 2
    if not sizes:
        raise WorkbenchError(f"--budget-kb {budget_kb:g} is below the smallest size, 1 KB")
    return sizes


def codesign_memory_kb(budget_kb: float | None, memory_kb: Sequence[int] | None) -> list[int]:
    """The level sizes (KB) co-design tries within --budget-kb ([] without a budget)."""
    if budget_kb is None:
        if memory_kb:
            raise WorkbenchError("--memory-kb: the level sizes to co-design from need "
                                 "--budget-kb (the on-chip capacity to design within)")
        return []
    if not memory_kb:
        return default_memory_kb(budget_kb)
    if min(memory_kb) > budget_kb:
        raise WorkbenchError(f"--memory-kb {' '.join(map(str, memory_kb))}: every size is over "
                             f"--budget-kb {budget_kb:g}, so no level fits the budget")
    return list(memory_kb)


def padded_layers(tiled: Sequence, blockings: Sequence[Blocking]) -> dict[str, dict]:
    """{layer: {dimension: [extent, padded extent]}} for the layers whose outermost blocks
    overhang them (priced as full blocks: `hierarchy.blocking.padding`)."""
    out = {}
    for layer, blocking in zip(tiled, blockings, strict=True):
        if pads := padding(layer, blocking):
            out[layer.name] = {d: list(v) for d, v in pads.items()}
    return out


def design_summary(design: Design) -> dict:
    """One design as plain data: hierarchy, on-chip KB, energies (pJ), memory:compute."""
    return {"hierarchy": design.hierarchy.name, "on_chip_kb": design.capacity_bytes / KB,
            "energy_pj": design.energy_pj, "mac_energy_pj": design.mac_energy_pj,
            "memory_to_compute": design.memory_to_compute,
            "blockings": [b.describe() for b in design.blockings],
            "tiles": [[list(t) for t in b.tiles] for b in design.blockings]}


def given_summary(frame: pd.DataFrame, plans: Sequence[plan.LayerPlan],
                  hierarchy: Hierarchy) -> dict:
    """The plan (`hierarchy_plan` rows and their `layer_plans`) on the given hierarchy as
    `design_summary`'s document, with cycles when the model has them."""
    totals = plan.hierarchy_totals(frame)
    doc = {"hierarchy": hierarchy.name, "on_chip_kb": on_chip_bytes(hierarchy) / KB,
           "energy_pj": totals["energy_pj"], "mac_energy_pj": totals["mac_energy_pj"],
           "memory_to_compute": totals["memory_to_compute"],
           "blockings": list(frame["blocking"]),
           "tiles": [[list(t) for t in p.found.blocking.tiles] for p in plans]}
    return {**doc, **cycle_summary(frame)}


def cycle_summary(frame: pd.DataFrame) -> dict:
    """A `hierarchy_plan`'s cycles when its model has them: the total, time_ms at the
    datapath's clock when it has one, and per layer [cycles, bound, MAC array use]."""
    if "cycles" not in frame.columns:
        return {}
    totals = plan.hierarchy_totals(frame)
    out = {key: totals[key] for key in ("cycles", "time_ms") if key in totals}
    out["layer_cycles"] = {row.layer: [float(row.cycles), str(row.bound), float(row.array_use)]
                           for row in frame.itertuples()}
    return out


def target_of(levels_file: str | None, platform: str | None, elem_bytes: int | None,
              psum_bytes: int | None) -> tuple[Hierarchy, ElementBytes]:
    """The hierarchy and element widths of --levels or --platform (exactly one)."""
    if (levels_file is None) == (platform is None):
        raise WorkbenchError("give exactly one of --levels FILE and --platform NAME|FILE")
    if levels_file is not None:
        hierarchy = load_hierarchy(levels_file)
        widths = plan.DEFAULT_PRECISION
    else:
        plat = platforms.load_platform(platform)
        hierarchy, widths = plan.resolve(plat)
    if elem_bytes is not None:
        widths = ElementBytes(elem_bytes, elem_bytes, elem_bytes, widths.partial_sums)
    if psum_bytes is not None:
        widths = dataclasses.replace(widths, partial_sums=psum_bytes)
    return hierarchy, widths


def run(network: str, levels_file: str | None = None, budget_kb: float | None = None,
        memory_kb: Sequence[int] | None = None, batch: int | None = None,
        elem_bytes: int | None = None, psum_bytes: int | None = None,
        platform: str | None = None, workers: int = 0, progress: bool = False) -> dict:
    """The command's result as one document: rows (per layer and level), the design on the
    given hierarchy (--levels file or --platform's) and, with a budget, the co-designed one
    and the Pareto front. With `workers`, that many worker processes search beside this one:
    the given hierarchy's layers from both ends (a layer of many slices in shares), then the
    grid from its other end. Bars on stderr if `progress`."""
    sizes = codesign_memory_kb(budget_kb, memory_kb)  # checked before anything is priced
    net = layers.load_network(network, batch=batch)
    tiled = tuple(net.tiled_layers())
    hierarchy, precision = target_of(levels_file, platform, elem_bytes, psum_bytes)
    designer = Codesigner(tiled, precision, plan.SIZE_ENERGY)
    if sizes:  # a grid its rule cannot price is refused before anything is priced
        space_around(hierarchy, [s * KB for s in sizes]).check_priced(designer.size_energy)
    prefetcher = Prefetcher(designer, workers) if workers else None
    try:
        price_given(designer, hierarchy, prefetcher, progress)
        try:
            frame = plan.hierarchy_plan(tiled, hierarchy, precision,
                                        caches=designer.caches)
        except NoFitError as exc:
            raise WorkbenchError(f"some layer of {net.name!r} fits no blocking on "
                                 f"{hierarchy.name!r}: {exc}") from None
        plans = plan.layer_plans(tiled, hierarchy, precision, caches=designer.caches)
        doc = {"network": net.name, "given": given_summary(frame, plans, hierarchy),
               "rows": plan.hierarchy_traffic(tiled, hierarchy, precision,
                                              caches=designer.caches)}
        doc["given"]["padded"] = padded_layers(tiled, [p.found.blocking for p in plans])
        doc["dense_priced"] = {lay.name: [lay.macs, lay.Kx * lay.Ky * lay.Kc * lay.Oc *
                                          lay.Ox * lay.Oy * lay.On]
                               for lay in tiled if not regular_connections(lay)}
        if budget_kb is not None:
            doc["codesign"] = _codesign(designer, prefetcher, hierarchy, sizes, budget_kb,
                                        progress)
    finally:
        if prefetcher is not None:
            prefetcher.close()  # the workers stop, also on an error
    return doc


SHOW_EVERY_S = 0.5  # a bar's "search under way" postfix is rewritten at most this often


@contextmanager
def _under_way(bar: tqdm) -> Iterator[None]:
    """The bar's postfix says how far the search under way in this thread is (its fraction
    of passes done: `interrupt.progress`); its elapsed time is redrawn every SHOW_EVERY_S s
    meanwhile."""
    if bar.disable:
        yield
        return
    last = [time.perf_counter()]

    def show(fraction: float) -> None:
        now = time.perf_counter()
        if now - last[0] >= SHOW_EVERY_S:
            last[0] = now
            bar.set_postfix_str(f"search under way {fraction:.0%}")

    done = threading.Event()

    def tick() -> None:  # the bar's clock goes on between a search's reports (slices)
        while not done.wait(SHOW_EVERY_S):
            bar.refresh()

    timer = threading.Thread(target=tick, daemon=True) if SHOW_EVERY_S > 0 else None
    interrupt.watch(show)
    if timer is not None:
        timer.start()
    try:
        yield
    finally:
        interrupt.watch(None)
        done.set()
        if timer is not None:
            timer.join()


def price_given(designer: Codesigner, hierarchy: Hierarchy, prefetcher: Prefetcher | None,
                progress: bool = False) -> None:
    """Search every layer of the designer on the hierarchy (with a prefetcher: together with
    its workers, a layer of many slices in shares; a bar of layers on stderr if `progress`)
    and hand the results to `hierarchy_plan` (`remember`, in the designer's caches): they are
    its own search's."""
    with tqdm(total=len(designer.layers), desc="layers searched", file=sys.stderr,
              disable=not progress, leave=False) as bar, _under_way(bar):
        if prefetcher is None:
            for layer in designer.layers:
                designer.layer_result(layer, hierarchy)
                bar.update()
        else:
            prefetcher.want([hierarchy], last_layer_first=True, shared=True)
            prefetcher.design(hierarchy, done=lambda _: bar.update())
    _remember(designer, hierarchy)


def _remember(designer: Codesigner, hierarchy: Hierarchy) -> None:
    for layer in designer.layers:
        found = designer.layer_result(layer, hierarchy) \
            if designer.known_layer(layer, hierarchy) else None
        if found is not None:  # (a layer fitting nothing is searched again for its message)
            plan.remember(layer, hierarchy, designer.precision, designer.size_energy, found,
                          designer.caches)


def _codesign(designer: Codesigner, prefetcher: Prefetcher | None, hierarchy: Hierarchy,
              sizes: list[int], budget_kb: float, progress: bool) -> dict:
    """The co-design part of `run`'s document: the grid of level sizes around the hierarchy
    priced here (with a prefetcher: from both ends), then `codesign` on its memo."""
    tiled, precision = designer.layers, designer.precision
    space = space_around(hierarchy, [s * KB for s in sizes])
    grid = list(space.gen_hierarchies())
    found = prefetcher.designs(grid) if prefetcher is not None else \
        (designer.design(h) for h in grid)  # codesign then finds every one memoized
    with tqdm(found, total=len(grid), desc="hierarchies priced", file=sys.stderr,
              disable=not progress, leave=False) as bar, _under_way(bar):
        for _ in bar:
            pass
    result = codesign(tiled, space, budget=budget_kb * KB, designer=designer)
    if result.best is None:
        raise WorkbenchError(f"no hierarchy of the grid within {budget_kb:g} KB fits "
                             "every layer")
    _remember(designer, result.best.hierarchy)
    return {"budget_kb": budget_kb, spelling.MEMORY_KB: sizes,
            "energies_from_sizes": [lvl.name for lvl in hierarchy.on_chip
                                    if lvl.energy_pj is not None],
            "hierarchies": len(result.designs),
            "within_budget": sum(d.capacity_bytes <= budget_kb * KB for d in result.designs),
            "best": {**design_summary(result.best),
                     **cycle_summary(plan.hierarchy_plan(tiled, result.best.hierarchy,
                                                         precision, caches=designer.caches)),
                     "padded": padded_layers(tiled, result.best.blockings)},
            "rows": designer.traffic_rows(result.best),
            "pareto": [design_summary(d) for d in result.pareto]}


def rows_table(rows: list[dict]) -> pd.DataFrame:
    """Per layer and level: accesses (elements) and energy (pJ, pJ/MAC)."""
    table = pd.DataFrame(rows)
    return table.rename(columns={"O_partial": "O partial", "O_final": "O final",
                                 "energy_pj": "energy pJ", "pj_per_mac": "pJ/MAC"})


def _kb(kilobytes: float) -> str:
    """An on-chip size given in KB, as people read sizes ('257 KB', '1.5 MB')."""
    return units.fmt_bytes(kilobytes * 1024)


def _uj(energy_pj: float) -> str:
    """A network's energy in µJ to six digits (co-designed and given hierarchies differ in
    the fourth: '656.565 µJ', '128,884 µJ')."""
    return f"{units.fmt_number(energy_pj / 1e6, 6)} µJ"


def _print_design(title: str, design: dict, rows: list[dict],
                  args: argparse.Namespace | None = None) -> None:
    cycles = f", {units.fmt_count(round(design['cycles']))} cycles" if "cycles" in design else ""
    if "time_ms" in design:
        cycles += f" ({units.fmt_ms(design['time_ms'])})"
    print_text(f"{title}: {design['hierarchy']} ({_kb(design['on_chip_kb'])} on chip), "
          f"{_uj(design['energy_pj'])}, memory:compute "
          f"{units.fmt_number(design['memory_to_compute'], 4)}×{cycles}")
    table = rows_table(rows)
    for col in table.columns:  # readable numbers: separators, never an exponent
        if pd.api.types.is_integer_dtype(table[col]):
            table[col] = table[col].map(units.fmt_count)
        elif pd.api.types.is_float_dtype(table[col]):
            table[col] = table[col].map(lambda v: units.fmt_number(v, 4))
    print_table(table, args or argparse.Namespace())
    if design.get("layer_cycles"):
        print_text("cycles per layer (bound, MAC array use): " + ", ".join(
            f"{name} {units.fmt_count(round(c))} ({bound}, {use:.0%})"
            for name, (c, bound, use) in design["layer_cycles"].items()))
    if design.get("padded"):
        print_text("padded outermost blocks, priced as full (extent → padded): " + "; ".join(
            f"{name} " + ", ".join(f"{d} {e}→{p}" for d, (e, p) in pads.items())
            for name, pads in design["padded"].items()))


def _beyond_levels(name: str) -> str:
    """What a platform has that this command's blockings leave out ('' when nothing)."""
    plat = platforms.load_platform(name)
    parts = [what for what, on in (
        (f"{plat.cores} cores", plat.cores > 1),
        ("DMA setups", plat.dma_setup_cycles > 0),
        ("double buffering", plat.double_buffer),
        ("static power", plat.static_pj_per_cycle > 0)) if on]
    return " and ".join(filter(None, (", ".join(parts[:-1]), *parts[-1:])))


def cmd_hierarchy(args: argparse.Namespace) -> None:
    doc = run(args.network, args.levels, args.budget_kb, args.memory_kb, args.batch,
              args.elem_bytes, args.psum_bytes, args.platform, args.workers,
              progress=not getattr(args, "json", False) and sys.stderr.isatty())
    if getattr(args, "json", False):
        print(json.dumps(doc, indent=1))
        return
    _print_design(f"{doc['network']} on the given hierarchy", doc["given"], doc["rows"], args)
    if args.platform is not None and (beyond := _beyond_levels(args.platform)):
        print_text(f"(one core's least-energy blockings of {args.platform}'s levels; its "
                   f"{beyond} are priced with them in `workbench explore {args.network} "
                   f"--platform {args.platform} --objective energy`, one plan)")
    if doc["dense_priced"]:
        print_text("sparse connection tables without groups, priced as the dense layer (an upper "
              "bound; MACs real → priced): " + ", ".join(
                  f"{name} {units.fmt_count(real)} → {units.fmt_count(dense)}"
                  for name, (real, dense) in doc["dense_priced"].items()))
    if "codesign" in doc:
        co = doc["codesign"]
        print()
        sizes = ", ".join(units.fmt_value(kb) for kb in co[spelling.MEMORY_KB])
        _print_design(f"co-designed within {_kb(co['budget_kb'])} (best of "
                      f"{units.fmt_count(co['within_budget'])} hierarchies within it; "
                      f"{units.fmt_count(co['hierarchies'])} priced, level sizes {sizes} KB)",
                      co["best"], co["rows"], args)
        if co["energies_from_sizes"]:
            print_text("(every co-designed level is priced from its size, seed 001 table 3: the "
                  "given energy_pj of " + ", ".join(co["energies_from_sizes"]) +
                  " is not carried over)")
        given = doc["given"]
        if given["on_chip_kb"] <= co["budget_kb"] and \
                given["energy_pj"] < co["best"]["energy_pj"]:
            print_text(f"(the given hierarchy, {_kb(given['on_chip_kb'])} on chip and "
                  f"{_uj(given['energy_pj'])}, is within the budget and below the "
                  "grid's best: its sizes or energies are not the grid's)")
        over = [d for d in co["pareto"] if d["on_chip_kb"] > co["budget_kb"]]
        print_text("\nPareto front of the priced hierarchies (on chip, energy"
              + ("; * over the budget" if over else "") + "): " + ", ".join(
                  f"{_kb(d['on_chip_kb'])}{'*' if d in over else ''} "
                  f"{_uj(d['energy_pj'])}" for d in co["pareto"]))


def register(subparsers: argparse._SubParsersAction,
             common: argparse.ArgumentParser | None = None) -> None:
    """Add the `hierarchy` command (with the shared --json/--strict parent when given)."""
    p = subparsers.add_parser("hierarchy", parents=[common] if common else [],
                              help="per-level traffic and energy on a memory hierarchy; "
                                   "co-design within a budget")
    p.add_argument("network", help="zoo name or a .yaml/.onnx/.prototxt file")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--levels", metavar="FILE.yaml",
                       help="hierarchy file (levels from DRAM inwards) or shipped name")
    where.add_argument("--platform", metavar="NAME|FILE",
                       help="a platform's hierarchy: its levels, or DRAM + its local memory")
    p.add_argument("--budget-kb", type=positive_number, default=None,
                   help="co-design the level sizes within this on-chip capacity (KB)")
    p.add_argument("--memory-kb", type=positive_int, nargs="+", default=None, metavar="KB",
                   help="candidate level sizes to co-design from (KB; default powers of two up "
                        "to the budget)")
    p.add_argument("--sizes-kb", dest="memory_kb", type=positive_int, nargs="+",
                   action=Renamed, new="--memory-kb")
    p.add_argument("--batch", type=positive_int, default=None, help="images per batch (On)")
    p.add_argument("--elem-bytes", type=positive_int, default=None,
                   help="bytes per element (default 2, or the platform's widths)")
    p.add_argument("--psum-bytes", type=positive_int, default=None,
                   help="bytes per partial sum (default 4, or the platform's acc_bits)")
    p.add_argument("--workers", type=non_negative_int, default=0,
                   help="worker processes searching beside this one: the given hierarchy's "
                        "layers, then the co-design grid (default 0: this process alone)")
    if common is None:
        p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=cmd_hierarchy)

"""How far below the search's optimum do blockings outside its space S reach on real layers?
(prints; stops only if a blocking of S that fits as S fits beats the search, which would be a
search error). From each layer's optimum (`workbench.hierarchy.search`), every change of one
or two buffer positions (any array and level, to any loop index, -1 or bypass; tiles and loop
orders kept) is priced by `evaluate`. Printed per layer: the least energy found by moves that
fit by footprints (within S's rule; a gain here is a blocking outside S, e.g. a level's
buffers in two roles' groups) and by moves that fit only by eq. 2's buffers (`evaluate`'s
rule: S takes it for the innermost level's inputs only, so a gain here is an outer level's
rolling halo or streamed block, or a buffer smaller than a datapath step), each as % below
the optimum. Local moves only: a lower bound on what each restriction of S costs on that
layer, not its size.
Layers: lenet5's conv layers on three two-level hierarchies of the notebook-08 app (its
size-derived energies), and VGG16 conv layers on the shipped seed001_3level platform.
A second section compares two exact searches on one on-chip level, DRAM traffic only (1 pJ
per byte, nothing else priced): S's optimum against seed 002's search
(`tiling.dataflow_search`: eq. 2's buffers, canonical and HWC element orders), whose schedule
is checked to fit by `evaluate` and to move what that search says. A ratio above 1 is a lower
bound on what S's restrictions cost in traffic there.
Run: .venv/bin/python benchmarks/bench_hierarchy_reach.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import time

from workbench import layers
from workbench.hierarchy import (
    ARRAYS,
    Blocking,
    ElementBytes,
    Hierarchy,
    Level,
    evaluate,
)
from workbench.hierarchy.search import search
from workbench.hierarchy.search.bounds import fits_by_footprints, in_s
from workbench.layers import ConvLayer


def moves(layer: ConvLayer, hierarchy: Hierarchy, precision, size_energy,
          blocking: Blocking) -> tuple[float, float, float, int]:
    """(optimum pJ, least pJ by footprint-fitting moves, least by eq.-2-only moves, moves
    priced) from `blocking`."""
    base = evaluate(layer, blocking, hierarchy, precision, size_energy).total_energy_pj
    on_chip = len(hierarchy.levels) - 1
    entries = [(a, k) for a in range(len(ARRAYS)) for k in range(on_chip)
               if hierarchy.levels[k + 1].bytes_for(ARRAYS[a]) > 0]
    values = [None, *range(-1, blocking.n_loops)]
    start = [list(b) for b in blocking.buffers]
    by_feet, by_eq2, priced = base, base, 0
    for combo in itertools.chain(itertools.combinations(entries, 1),
                                 itertools.combinations(entries, 2)):
        for picked in itertools.product(values, repeat=len(combo)):
            buffers = [list(b) for b in start]
            for (a, k), v in zip(combo, picked, strict=True):
                buffers[a][k] = v
            if buffers == start:
                continue
            try:
                moved = Blocking(blocking.orders, blocking.tiles,
                                 tuple(tuple(b) for b in buffers))
                result = evaluate(layer, moved, hierarchy, precision, size_energy)
            except Exception:  # positions out of nesting order, or short of a datapath step
                continue
            priced += 1
            energy = result.total_energy_pj
            if not result.fits or energy >= base * (1 - 1e-12):
                continue
            if fits_by_footprints(result.transfers, hierarchy, precision):
                if in_s(layer, moved, hierarchy, True):
                    raise SystemExit(f"{layer.name}: a blocking of S below the search's "
                                     f"optimum: {moved}")
                by_feet = min(by_feet, energy)
            else:
                by_eq2 = min(by_eq2, energy)
    return base, by_feet, by_eq2, priced


def report(layer: ConvLayer, hierarchy: Hierarchy, precision, size_energy) -> None:
    start = time.perf_counter()
    found = search(layer, hierarchy, precision, size_energy)
    searched = time.perf_counter() - start
    base, feet, eq2, priced = moves(layer, hierarchy, precision, size_energy, found.blocking)
    print(f"  {layer.name:8} optimum {found.energy_pj / layer.macs:8.3f} pJ/MAC "
          f"(search {searched:5.1f} s); moves fitting by footprints "
          f"{100 * (1 - feet / base):5.2f}% lower, by eq. 2 only {100 * (1 - eq2 / base):5.2f}% "
          f"lower ({priced} moves priced)", flush=True)


def traffic_section(network: str = "seed002_alexnet",
                    memory_kb: tuple[int, ...] = (1, 4, 16, 64)) -> None:
    """S against seed 002's search on one level, DRAM bytes only."""
    from workbench.hierarchy.convert import from_dataflow
    from workbench.tiling.dataflow import DataflowSchedule, Precision
    from workbench.tiling.dataflow_search import search as dataflow_search

    widths = ElementBytes(1, 1, 1, 4)  # Precision()'s bytes per element
    print(f"{network} conv layers on one level, DRAM bytes only: S against seed 002's search "
          "(eq. 2's buffers, canonical and HWC orders)")
    for layer in layers.load_network(network).tiled_layers():
        if layer.kind != "conv":
            continue
        frame = dataflow_search(layer, [k * 1024 for k in memory_kb], precision=Precision())
        cells = []
        for kb, row in zip(memory_kb, frame.itertuples(), strict=True):
            hier = Hierarchy((Level("DRAM", None, 8, 1.0), Level("L1", kb * 1024, 8, 0.0)),
                             mac_energy_pj=0.0)
            (order, levels), tiles = row.schedule
            priced = evaluate(layer, from_dataflow(DataflowSchedule(order, tiles, levels)),
                              hier, widths)
            if not priced.fits or abs(priced.total_energy_pj - row.traffic_bytes) > 1e-6:
                raise SystemExit(f"{layer.name}: seed 002's schedule re-priced differently")
            found = search(layer, hier, widths)
            cells.append(f"{kb} KB {found.energy_pj / row.traffic_bytes:5.3f}")
        print(f"  {layer.name:9} S / seed 002 traffic: " + ", ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="lenet5 only")
    args = parser.parse_args()
    from bench_hierarchy import levels_platform

    from workbench.ui.hierarchy_view import hierarchy_view

    for sizes in ((32, 1), (16, 0.5), (8, 0.25)):
        app = hierarchy_view(network="lenet5", platform=levels_platform(*sizes))
        print(f"lenet5 conv layers, app hierarchy {sizes[0]:g} KB + {sizes[1]:g} KB:")
        for layer in app.designer.layers:
            report(layer, app.hierarchy(), app.designer.precision, app.designer.size_energy)
    traffic_section()
    if args.quick:
        return
    from workbench.explore.hierarchy_plan import (
        SIZE_ENERGY,
        platform_hierarchy,
        platform_precision,
    )
    from workbench.platforms import load_platform

    plat = load_platform("seed001_3level")
    print("VGG16 conv layers on platform seed001_3level:")
    for layer in layers.load_network("vgg16").tiled_layers():
        if layer.name in ("conv1_1", "conv2_1", "conv5_1"):
            report(layer, platform_hierarchy(plat), platform_precision(plat), SIZE_ENERGY)


if __name__ == "__main__":
    main()

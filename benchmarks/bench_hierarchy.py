"""Exact minimum-energy blocking of VGG16's conv layers on a 3-level hierarchy (prints, asserts
nothing): search time per layer and in total, the chains priced, the blocking found, and its
energy per MAC by level; beside it the same search with every level holding every array
(`bypass=False`, R's holders: the space S of earlier versions), its time and energy.

The hierarchy: DRAM, a 256 KB SRAM read 64 bits at a time, a 512 B register file read 16 bits
at a time, 16-bit data and 32-bit partial sums, 1 pJ per MAC (seed 001 fig. 5: "about
1 pJ/MAC"). Energies per 16 bits from seed 001 table 3 as printed: DRAM 320; 256 KB SRAM at
64 bits 15.60; the register file priced as the table's smallest memory (1 KB at 64 bits,
1.20), an upper bound for 512 B. What is searched is `workbench.hierarchy.search`'s space S
(any choice of the levels holding each array; per level a loop order of its group and a
buffering position per held array inside it; levels sharing no array nested either way; all
divisor chains of tiles; exact).
A second section searches seed 002 AlexNet's conv layers on the shipped seed001_3level
platform with and without bypass. A third drives the notebook-08 app
(`workbench.ui.hierarchy_view`) in Python on lenet5's conv layers and prints how long one
budget-slider move and one level-size edit take, on two on-chip levels and on three, and
four quick presses priced in turn against the background thread's newest-first. A fourth
times README's `workbench hierarchy` co-design example as a command, alone and with a worker.
Run: .venv/bin/python benchmarks/bench_hierarchy.py [--layers conv1_1 conv5_3] [--ui-only]
     [--platform-only] [--cli-only]
"""

from __future__ import annotations

import argparse
import statistics
import time

from workbench import layers
from workbench.hierarchy import ElementBytes, Hierarchy, Level, evaluate
from workbench.hierarchy.search import search
from workbench.hierarchy.search.dominance import inner_placements, outer_placements

PJ_PER_16B = {"DRAM": 320.0, "SRAM": 15.60, "RF": 1.20}  # seed 001 table 3


def levels_platform(*sizes_kb: float):
    """The hardware the hierarchy app had by default before it took a platform, as one:
    DRAM at 320 pJ per 16-bit access, on-chip levels L1, L2, ... of these sizes (KB) read 64
    bits at a time (energies from seed 001 table 3), one MAC at 1 pJ, 16-bit data, 32-bit
    partial sums."""
    from workbench.platforms import platform_from_dict

    levels = [{"name": "DRAM", "capacity": None, "access_bits": 16, "energy_pj": 320.0,
               "bandwidth": 16}]
    levels += [{"name": f"L{i + 1}", "capacity": int(kb * 1024), "access_bits": 64,
                "energy_pj": None} for i, kb in enumerate(sizes_kb)]
    return platform_from_dict({
        "name": "app-levels", "clock_mhz": 500,
        "memory": {"elem_bytes": 2, "double_buffer": False, "levels": levels},
        "datapath": {"macs_per_cycle": 1, "register_file_bytes": 1024, "acc_bits": 32,
                     "in_bits": 16, "w_bits": 16},
        "energy": {"mac_pj": 1.0}}, "benchmark platform")


def app_32_1(**kwargs):
    """The hierarchy app on lenet5's conv layers, L1 32 KB and L2 1 KB, budget 64 KB."""
    from workbench.ui.hierarchy_view import hierarchy_view

    return hierarchy_view(network="lenet5", platform=levels_platform(32, 1), budget_kb=64,
                          grid_kb=(1, 4, 16, 64, 256), **kwargs)


def vgg16_hierarchy() -> Hierarchy:
    return Hierarchy((Level("DRAM", None, 64, PJ_PER_16B["DRAM"] * 4),
                      Level("SRAM", 256 * 1024, 64, PJ_PER_16B["SRAM"] * 4),
                      Level("RF", 512, 16, PJ_PER_16B["RF"])),
                     name="dram-256KB-512B", mac_energy_pj=1.0)


def ui_section() -> None:
    """Time the hierarchy app's callbacks, driven as a notebook would drive them."""
    start = time.perf_counter()
    app = app_32_1()
    built = time.perf_counter() - start
    moves = []
    for exponent in (12, 14, 16, 18, 13, 15, 17, 10):
        start = time.perf_counter()
        app.budget.value = exponent
        moves.append(time.perf_counter() - start)
    edits = []  # level sizes off the grid: each edit searches both layers anew
    for level, exponent in ((0, 13), (0, 17), (1, 11), (1, 9), (0, 19), (1, 13)):
        start = time.perf_counter()
        app.sizes[level].value = 1 << exponent
        edits.append(time.perf_counter() - start)
    start = time.perf_counter()
    app.sizes[1].value = 1 << 9  # back to L1 512 KB, L2 512 B, edited before: memoized
    again = time.perf_counter() - start
    drags, known = [], 0  # sliders dragged one step at a time (steps to a hierarchy priced
    for level, exponents in ((0, range(20, 24)), (1, range(10, 16)),  # before: not counted)
                             (0, range(22, 15, -1)), (1, range(14, 7, -1))):
        for exponent in exponents:
            searches = app.designer.searches
            start = time.perf_counter()
            app.sizes[level].value = 1 << exponent
            if app.designer.searches > searches:
                drags.append(time.perf_counter() - start)
            else:
                known += 1
    print(f"hierarchy app (lenet5 conv layers, 2 on-chip levels, grid of "
          f"{len(app.every_source.data['capacity_kb'])} hierarchies): built in {built:.2f} s; "
          f"one budget-slider move {1e3 * statistics.median(moves):.2f} ms (median of "
          f"{len(moves)}); one level-size edit {1e3 * statistics.median(edits):.0f} ms (median "
          f"of {len(edits)} jumps, {1e3 * min(edits):.0f}-{1e3 * max(edits):.0f}), "
          f"{1e3 * statistics.median(drags):.0f} ms (median of {len(drags)} one-step drags to "
          f"new hierarchies, {1e3 * min(drags):.0f}-{1e3 * max(drags):.0f}; {known} more "
          f"memoized), repeated (memoized) "
          f"{1e3 * again:.1f} ms")


def ui_prefetch_section() -> None:
    """The same app searching its sliders' other positions ahead (`prefetch`, worker processes
    on the other cores): a jump while they are searched, the time until all are, then the same
    jumps and drags as `ui_section`."""
    from workbench.hierarchy.prefetch import default_workers

    start = time.perf_counter()
    app = app_32_1(prefetch=True)
    built, wanted = time.perf_counter() - start, len(app.prefetcher.pending)
    try:
        early = []  # jumps far from the start while the workers are searching
        for level, exponent in ((0, 21), (1, 14), (0, 23)):
            start = time.perf_counter()
            app.sizes[level].value = 1 << exponent
            early.append(time.perf_counter() - start)
        app.sizes[0].value, app.sizes[1].value = 1 << 15, 1 << 10  # 32 KB | 1 KB: memoized
        start = time.perf_counter()
        app.prefetcher.wait_idle()
        warm = time.perf_counter() - start
        ran, moves = app.designer.ran, []
        for level, exponents in ((0, (13, 17, 19)), (1, (11, 9, 13)), (0, range(20, 24)),
                                 (1, range(10, 16)), (0, range(22, 15, -1))):
            for exponent in exponents:
                start = time.perf_counter()
                app.sizes[level].value = 1 << exponent
                moves.append(time.perf_counter() - start)
        app.sizes[0].value, app.sizes[1].value = 1 << 15, 1 << 10
        toggles = []  # each from the start's shape, and back (memoized)
        for there, back in ((app.panel.remove_level.click, app.panel.add_level.click),
                            (app.panel.add_level.click, app.panel.remove_level.click)):
            start = time.perf_counter()
            there()
            toggles.append(time.perf_counter() - start)
            back()
            app.sizes[1].value = 1 << 10  # the level added back is L1's half: 1 KB again
        print(f"hierarchy app searching ahead ({default_workers()} worker process(es), lenet5 "
              f"conv layers, 2 on-chip levels): built in {built:.2f} s, {wanted} layer searches "
              f"wanted; jumps while they are searched "
              f"{', '.join(f'{1e3 * t:.0f}' for t in early)} ms; all searched "
              f"{warm:.1f} s later; then {len(moves)} jumps and drags: median "
              f"{1e3 * statistics.median(moves):.1f} ms ({1e3 * min(moves):.1f}-"
              f"{1e3 * max(moves):.1f}); 1 level, 3 levels (L3 512 B): "
              f"{', '.join(f'{1e3 * t:.0f}' for t in toggles)} ms; "
              f"{app.designer.ran - ran} searched by the app itself")
    finally:
        app.close()


def _size(level: int, exponent: int):
    def press(app) -> None:
        app.sizes[level].value = 1 << exponent
    return press


# the edits on three on-chip levels, from L1 32 KB and L2 1 KB: the panel's "+ level inside"
# (L3 at half of L2), then three level sizes
PRESSES = (("2 -> 3 levels (L3 512 B)", lambda app: app.panel.add_level.click()),
           ("L3 1 KB", _size(2, 10)), ("L1 16 KB", _size(0, 14)), ("L2 4 KB", _size(1, 12)))


def ui_three_section(prefetch: bool = False) -> None:
    """Time the app's edits on three on-chip levels (`PRESSES`, lenet5's conv layers): each
    searches both layers anew, conv2 (on 32 KB, 1 KB, 1 KB) over 4.3 × 10⁷ tile points in
    4.2 × 10⁶ classes (`search_classes`;
    prefetch: with a worker searching ahead, which at each edit drops that and searches
    shares of conv2's classes, this process the others and conv1)."""
    app = app_32_1(prefetch=prefetch)
    steps = []
    try:
        for what, press in PRESSES:
            start = time.perf_counter()
            press(app)
            refused = " (refused)" if app.status.value else ""
            steps.append(f"{what} {time.perf_counter() - start:.1f} s{refused}")
    finally:
        app.close()
    print(f"hierarchy app, three on-chip levels{' searching ahead' if prefetch else ''} (lenet5 "
          "conv layers, from L1 32 KB, L2 1 KB): " + "; ".join(steps))




def ui_presses_section(gap_s: float = 0.5) -> None:
    """Quick presses on three on-chip levels (lenet5's conv layers): the four edits of
    `ui_three_section` made `gap_s` apart, timed from the first to the last one shown; priced
    in turn (the callbacks on the kernel's thread: each waits for the one before), then in the
    background thread (`background`: a newer edit supersedes the pricing under way). Each app
    has its own caches, so both start cold."""
    figures = []
    for background in (False, True):
        app = app_32_1(background=background)
        try:
            start = time.perf_counter()
            for i, (_, press) in enumerate(PRESSES):
                if i:
                    time.sleep(max(0.0, start + i * gap_s - time.perf_counter()))
                press(app)
            app.wait()
            seconds = time.perf_counter() - start
            sizes = "/".join(f"{lvl.total_bytes / 1024:g}" for lvl in app.design.hierarchy.on_chip)
            runs = (f", {app.background.runs} pricings started, {app.background.superseded} "
                    "superseded" if background else "")
            figures.append(f"{'in the background' if background else 'in turn'} "
                           f"{seconds:.1f} s{runs} (shown: {sizes} KB, "
                           f"{app.design.energy_pj / app.macs:.4f} pJ/MAC)")
        finally:
            app.close()
    print(f"hierarchy app, four quick presses {gap_s:g} s apart on three on-chip levels (lenet5 "
          "conv layers: 2 -> 3 levels, L3 1 KB, L1 16 KB, L2 4 KB), first press to the last "
          "one shown: " + "; ".join(figures))


def platform_section() -> None:
    """Bypass on a shipped platform: seed 002 AlexNet's conv layers on seed001_3level (DRAM,
    256 KB SRAM, 1 KB register file, the 256-MAC datapath, table-3 energies), S against S
    with every level holding every array."""
    from workbench.explore.hierarchy_plan import (
        SIZE_ENERGY,
        platform_hierarchy,
        platform_precision,
    )
    from workbench.platforms import load_platform

    plat = load_platform("seed001_3level")
    hier, precision = platform_hierarchy(plat), platform_precision(plat)
    print("seed002_alexnet conv layers on platform seed001_3level: S (bypass by choice) "
          "against SR (every level holds every array)")
    for layer in layers.load_network("seed002_alexnet").tiled_layers():
        if layer.kind != "conv":
            continue
        start = time.perf_counter()
        found = search(layer, hier, precision, SIZE_ENERGY)
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        old = search(layer, hier, precision, SIZE_ENERGY, bypass=False)
        seconds_r = time.perf_counter() - start
        print(f"  {layer.name:9} S {found.energy_pj / layer.macs:6.3f} pJ/MAC in "
              f"{seconds:5.1f} s, SR {old.energy_pj / layer.macs:6.3f} in {seconds_r:5.1f} s "
              f"({100 * (1 - found.energy_pj / old.energy_pj):4.1f}% lower); S holds (SRAM, "
              f"RF) I {_held(found, 'I')}, W {_held(found, 'W')}, O {_held(found, 'O')}")


def _held(found, array: str) -> str:
    return "".join("-" if p is None else "x" for p in found.blocking.positions(array))


def cli_section(runs: int = 3) -> None:
    """Time README's co-design example, `workbench hierarchy lenet5 --levels seed001_two_level
    --budget-kb 64`, as whole commands (fresh processes: cold memos and tables), alone and
    with one worker (`--workers 1`), in turn; medians, and whether the outputs are equal."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "workbench.cli", "hierarchy", "lenet5", "--levels",
               "seed001_two_level", "--budget-kb", "64"]
    seconds, outputs = {0: [], 1: []}, {0: set(), 1: set()}
    for _ in range(runs):
        for workers in (0, 1):
            start = time.perf_counter()
            done = subprocess.run([*command, "--workers", str(workers)], capture_output=True,
                                  text=True, check=True)
            seconds[workers].append(time.perf_counter() - start)
            outputs[workers].add(done.stdout)
    same = len(outputs[0] | outputs[1]) == 1
    print(f"README co-design example (lenet5, seed001_two_level, budget 64 KB; whole command, "
          f"median of {runs}): alone {statistics.median(seconds[0]):.2f} s, with one worker "
          f"{statistics.median(seconds[1]):.2f} s; outputs {'equal' if same else 'DIFFER'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", nargs="*", help="conv layer names (default: all)")
    parser.add_argument("--ui-only", action="store_true", help="only the app timing section")
    parser.add_argument("--platform-only", action="store_true",
                        help="only the seed001_3level section")
    parser.add_argument("--cli-only", action="store_true",
                        help="only the README co-design command's timing")
    parser.add_argument("--table-only", action="store_true",
                        help="only the VGG16 table (S against R's holders)")
    args = parser.parse_args()
    if args.ui_only:
        ui_section()
        ui_prefetch_section()
        ui_three_section()
        ui_three_section(prefetch=True)
        ui_presses_section()
        return
    if args.platform_only:
        platform_section()
        return
    if args.cli_only:
        cli_section()
        return
    net = layers.load_network("vgg16")
    convs = [lay for lay in net.tiled_layers() if lay.kind == "conv"]
    if args.layers:
        convs = [lay for lay in convs if lay.name in args.layers]
    hier, precision = vgg16_hierarchy(), ElementBytes(2, 2, 2, 4)
    print(f"hierarchy {hier.name}: " + ", ".join(
        f"{lvl.name} {lvl.total_bytes:g} B, {lvl.access_bits} b, {lvl.energy_pj:g} pJ"
        for lvl in hier.levels) + "; 1 pJ/MAC")
    start = time.perf_counter()
    outer_placements(("I", "W", "O"))  # the per-level placement tables, built once per process
    inner_placements(("I", "W", "O"))
    print(f"placement tables built in {time.perf_counter() - start:.1f} s")
    print(f"{'layer':9} {'S s':>6} {'SR s':>6} {'chains':>9}  {'tiles t0 | t1 (X Y C M N)':30} "
          f"{'S pJ/MAC':>8} {'SR pJ/MAC':>9}  S blocking (positions I W O, None: bypassed); "
          "S by level (pJ/MAC)")
    total = total_r = 0.0
    energy = energy_r = macs = 0.0
    for layer in convs:
        start = time.perf_counter()
        found = search(layer, hier, precision)
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        old = search(layer, hier, precision, bypass=False)
        seconds_r = time.perf_counter() - start
        total, total_r = total + seconds, total_r + seconds_r
        energy, energy_r, macs = energy + found.energy_pj, energy_r + old.energy_pj, \
            macs + layer.macs
        parts = evaluate(layer, found.blocking, hier, precision).energy_pj
        tiles = " | ".join(" ".join(map(str, t)) for t in found.blocking.tiles)
        by_level = ", ".join(f"{k} {v / layer.macs:.2f}" for k, v in parts.items())
        print(f"{layer.name:9} {seconds:6.1f} {seconds_r:6.1f} {found.combinations:9.3g}  "
              f"{tiles:30} {found.energy_pj / layer.macs:8.2f} {old.energy_pj / layer.macs:9.2f}"
              f"  {found.blocking.describe()} {found.blocking.buffers}; {by_level}")
    print(f"total search time: S {total:.1f} s, SR (R's holders) {total_r:.1f} s for "
          f"{len(convs)} layers (one process); network energy S {energy / macs:.3f} pJ/MAC, "
          f"SR {energy_r / macs:.3f}")
    if args.table_only:
        return
    platform_section()
    ui_section()
    ui_prefetch_section()
    ui_three_section()
    ui_three_section(prefetch=True)
    ui_presses_section()
    cli_section()


if __name__ == "__main__":
    main()

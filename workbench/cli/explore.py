"""`workbench explore`: per-layer best schedule and tile of a network on a platform."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from workbench import explore, layers, platforms
from workbench.cli.args import (
    Renamed,
    add_network,
    memory_kb,
    output_file,
    parse_bytes,
    positive_int,
    size,
)
from workbench.cli.tables import print_table, print_text, wide
from workbench.errors import WorkbenchError
from workbench.explore import composed
from workbench.layers.dims import LAYER_DIMS
from workbench.platforms.parts import capacity_total
from workbench.report import output, page, summary
from workbench.tiling import SCHEDULES
from workbench.viz import units

__all__ = ["best_per_layer", "parse_bytes", "platform_of", "register"]

KB = 1024


def _in_kb(size_bytes: int | list[int]) -> float | list[float]:
    """Sizes of the old --memory (bytes, from '64KB') in KB, as --memory-kb takes them."""
    if isinstance(size_bytes, list):
        return [b / KB for b in size_bytes]
    return size_bytes / KB


def platform_of(args: argparse.Namespace) -> platforms.Platform:
    """The platform of --platform with --memory-kb, --cores, --dma-channels, --broadcast."""
    overrides = {} if args.memory_kb is None else {"local_mem_bytes": int(args.memory_kb * KB)}
    for name in ("cores", "dma_channels"):
        if getattr(args, name, None) is not None:
            overrides[name] = getattr(args, name)
    if getattr(args, "broadcast", None) is not None:
        overrides["dma_broadcast"] = args.broadcast == "on"
    return platforms.load_platform(args.platform, **overrides)


def fusion_modes(args: argparse.Namespace, net) -> str | dict[str, str]:
    """--fusion for every layer, with --fuse LAYER=MODE exceptions."""
    if not args.fuse:
        return args.fusion
    from workbench.explore.network import fusion_modes as expand

    modes = dict(zip([layer.name for layer in net], expand(net, args.fusion), strict=True))
    for item in args.fuse:
        name, sep, mode = item.partition("=")
        if not sep:
            raise WorkbenchError(f"--fuse {item!r}: expected LAYER=MODE, MODE one of "
                                 + ", ".join(explore.FUSION_MODES))
        modes[name] = mode
    return modes


def best_per_layer(args: argparse.Namespace
                   ) -> tuple[pd.DataFrame, dict, str, platforms.Platform]:
    net = layers.load_network(args.network, batch=args.batch, input_shape=args.input_shape)
    plat = platform_of(args)
    per_layer = explore.network_plan(net, plat, args.objective, fusion_modes(args, net),
                                     tuple(args.schedule or SCHEDULES), compare_unfused=True,
                                     progress=not args.json and sys.stderr.isatty())
    totals = explore.network_totals(per_layer, plat)
    totals["unfused_ext_accesses"] = per_layer.attrs["unfused_ext_accesses"]
    memory = f"{units.fmt_bytes(plat.local_mem_bytes)} local memory each"
    if composed.applies(plat):
        memory = "levels " + " | ".join(
            lvl.name + ("" if lvl.capacity is None
                        else f" {units.fmt_bytes(capacity_total(lvl.capacity))}")
            for lvl in plat.memory.levels) + " each"
    title = (f"{net.name} (batch {net.batch}) on {plat.name}: {plat.cores} core(s), "
             f"{memory}, "
             f"{'double' if plat.double_buffer else 'single'} buffered, fusion {args.fusion}"
             f"{' with exceptions' if args.fuse else ''}, best by {args.objective}")
    return per_layer, totals, title, plat


def levels_text(per_layer: pd.DataFrame, plat: platforms.Platform) -> str | None:
    """On a platform with levels: the network's energy by level and MAC, and its accesses per
    level (None: the single-level model priced it)."""
    names = [lvl.name for lvl in plat.memory.levels]
    if not all(f"energy_pj_{n}" in per_layer for n in names):
        return None
    moved = ", ".join(f"{n} {units.fmt_count(per_layer[f'accesses_{n}'].sum())}"
                      for n in names)
    if not units.has_energy(plat):
        return f"conv/fc layers by level: accesses (elements) {moved}; energy n/a"
    energy = ", ".join(f"{n} {units.fmt_energy(per_layer[f'energy_pj_{n}'].sum())}"
                       for n in names)
    mac = units.fmt_energy(per_layer.loc[per_layer["schedule"] == "levels",
                                         "energy_compute_pj"].sum())
    return (f"conv/fc layers by level: energy {energy}, MAC {mac}; "
            f"accesses (elements) {moved}")


# the columns `explore` leaves out first to fit the terminal (all of them with --wide)
EXPLORE_DROP_FIRST = ("chosen by", "DMA setup", "CTC ops/B", "util", "DMA", "split",
                      "footprint", "GOps/s", "cores")
SHORT_TILE = "tile / chunk"
LEVEL_TILES = f"blocks {'×'.join(LAYER_DIMS)} of each on-chip level, innermost first"


def print_mapping_table(table: pd.DataFrame, args: argparse.Namespace) -> None:
    """The per-layer table; fitted to the terminal, the tile column's header is shortened
    and its dimensions named once under the table."""
    tile = f"{units.TILE_HEADER} / chunk"
    if wide(args) or tile not in table:
        print_table(table, args, EXPLORE_DROP_FIRST)
        return
    print_table(table.rename(columns={tile: SHORT_TILE}), args, EXPLORE_DROP_FIRST)
    tiles = LEVEL_TILES if (table["schedule"] == "levels").any() else units.TILE_HEADER
    print_text(f"({SHORT_TILE}: {tiles}, or a chunk of rows × maps)")


def cmd_explore(args: argparse.Namespace) -> None:
    per_layer, totals, title, plat = best_per_layer(args)
    table = summary.per_layer_table(per_layer, plat)
    if args.json:
        doc = {"title": title, "rows": json.loads(per_layer.to_json(orient="records")),
               "totals": totals}
        print(json.dumps(doc, indent=1))
    else:
        print_text(title)
        print_mapping_table(table, args)
        print_text("total: " + summary.totals_text(totals, plat))
        for key, text in summary.key_findings(per_layer, totals, plat).items():
            print_text(f"{key}: {text}")
        if (by_level := levels_text(per_layer, plat)) is not None:
            print_text(by_level)
    sys.stdout.flush()  # shown before the files are written: a late write error loses nothing
    if args.csv:
        output.write_with(args.csv, lambda f: per_layer.to_csv(f, index=False))
    if args.html:
        page.write_summary_page(Path(args.html), title, table, totals, plat)


def cmd_traffic(args: argparse.Namespace) -> None:
    from workbench.tiling.dataflow import Precision

    net = layers.load_network(args.network, batch=args.batch, input_shape=args.input_shape)
    sizes = [int(kb * KB) for kb in args.memory_kb]
    precision = Precision(args.elem_bytes, args.elem_bytes, args.elem_bytes, args.psum_bytes)
    convs = [lay for lay in net.tiled_layers() if lay.kind == "conv" or args.include_fc]
    if args.listing:
        layer = net[args.listing]
        if layer not in convs:
            kinds = "conv and fc" if args.include_fc else "conv"
            raise WorkbenchError(f"--listing {args.listing!r} is a {layer.kind} layer; listings "
                                 f"are of {kinds} layers: "
                                 + ", ".join(lay.name for lay in convs))
        for size in sizes:
            print(explore.best_dataflow_listing(layer, size, precision,
                                                paper_orders=args.orders == "paper",
                                                tile_set=args.tiles))
        return
    table = explore.traffic_table(convs, sizes, args.model or explore.TRAFFIC_MODELS, precision,
                                  paper_orders=args.orders == "paper", tile_set=args.tiles,
                                  progress=not args.json and sys.stderr.isatty())
    totals = (table.groupby(["memory_bytes", "model"])["traffic_bytes"].sum(min_count=1)
              .unstack("model") / 1e6)
    totals["compulsory"] = table.groupby("memory_bytes")["compulsory_bytes"].sum() / \
        table["model"].nunique() / 1e6
    totals.index = [units.fmt_bytes(b) for b in totals.index]
    table = explore.traffic_rows(table)  # the memory size in KiB, as everywhere
    if args.json:
        print(json.dumps({"rows": json.loads(table.to_json(orient="records"))}))
    else:
        print_text(f"{net.name}: off-accelerator traffic (MB) of {len(convs)} layers by local "
                   f"memory and model ({args.elem_bytes}-byte elements, {args.psum_bytes}-byte "
                   "partial sums)")
        print_table(units.readable(totals), args, index=True)
    sys.stdout.flush()  # shown before the file is written: a late write error loses nothing
    if args.csv:
        output.write_with(args.csv, lambda f: table.to_csv(f, index=False))


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("traffic", parents=[common],
                       help="least traffic per memory size under each traffic model")
    add_network(p)
    p.add_argument("--model", action="append", choices=explore.TRAFFIC_MODELS,
                   help="traffic model (repeat; default all four)")
    p.add_argument("--memory-kb", nargs="+", type=memory_kb, default=[1, 4, 16, 64, 256],
                   metavar="KB", help="local memory sizes in KB, e.g. 1 64 1024 (default 1 4 16 "
                                      "64 256)")
    p.add_argument("--memory", dest="memory_kb", nargs="+", type=size, action=Renamed,
                   new="--memory-kb", convert=_in_kb)
    p.add_argument("--batch", type=positive_int, default=None, help="images per batch (On)")
    p.add_argument("--elem-bytes", type=positive_int, default=1, help="bytes per element")
    p.add_argument("--psum-bytes", type=positive_int, default=4, help="bytes per partial sum")
    p.add_argument("--include-fc", action="store_true", help="also the fully connected layers")
    p.add_argument("--orders", choices=("default", "paper"), default="default",
                   help="dataflow element orders: canonical and HWC, or the paper's 180")
    p.add_argument("--tiles", choices=("all", "pow2"), default="all",
                   help="dataflow/peemen/cache tile sizes: every candidate, or powers of two")
    p.add_argument("--csv", type=output_file, help="write the per-layer table to this CSV")
    p.add_argument("--listing", metavar="LAYER",
                   help="print LAYER's least-traffic dataflow schedule as a loop nest instead")
    p.set_defaults(func=cmd_traffic)
    p = sub.add_parser("explore", parents=[common], help="best tile and schedule per layer")
    add_network(p)
    p.add_argument("--platform", default="idsp", help="preset name or platform .yaml")
    p.add_argument("--memory-kb", type=memory_kb, metavar="KB",
                   help="local memory size in KB, e.g. 64 (default: the platform's)")
    p.add_argument("--memory", dest="memory_kb", type=size, action=Renamed, new="--memory-kb",
                   convert=_in_kb)
    p.add_argument("--schedule", action="append", choices=SCHEDULES,
                   help="schedule to consider (repeat; default all five)")
    p.add_argument("--batch", type=positive_int, default=None, help="images per batch (On)")
    p.add_argument("--objective", choices=explore.OBJECTIVES, default="cycles",
                   help="what 'best' means: least cycles, energy, external accesses (seed 000 "
                        "table 7.10) or energy-delay product")
    p.add_argument("--cores", type=positive_int, help="cores (default: the platform's)")
    p.add_argument("--dma-channels", type=positive_int,
                   help="DMA setups in flight at once (default: the platform's)")
    p.add_argument("--broadcast", choices=("on", "off"),
                   help="one DMA fetch delivered to every core that shares it (default: the "
                        "platform's)")
    p.add_argument("--fusion", choices=explore.FUSION_MODES, default="auto",
                   help="keep maps on chip between layers: the search decides (auto), never "
                        "(off), or wherever the next layer reads exactly this one's output "
                        "(force)")
    p.add_argument("--fuse", action="append", metavar="LAYER=MODE",
                   help="fusion mode of one layer's output (repeat), e.g. conv1=off")
    p.add_argument("--jobs", type=positive_int, default=1,
                   help="accepted for compatibility (the candidate-set query needs no workers)")
    p.add_argument("--csv", type=output_file,
                   help="write every column of the per-layer table to this CSV")
    p.add_argument("--html", type=output_file, help="write a static HTML summary to this file")
    p.set_defaults(func=cmd_explore)

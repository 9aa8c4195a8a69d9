"""`workbench simd`: mapping report of a network's layers on the platform's vector unit:
local vector transfers by cause and compute cycles by part, each adding up to its total."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from workbench import explore, layers, platforms, simd
from workbench.cli.args import add_network, positive_int
from workbench.cli.tables import print_table, print_text
from workbench.errors import WorkbenchError
from workbench.simd.codegen import VERSIONS
from workbench.tiling import Tile
from workbench.tiling.model import check_tile
from workbench.viz import units


def cmd_simd(args: argparse.Namespace) -> None:
    net = layers.load_network(args.network, batch=args.batch, input_shape=args.input_shape)
    if args.version is not None:
        return cmd_codegen(args, net)
    plat = platforms.load_platform(args.platform or "idsp")
    if args.layer is None:
        if args.tile or args.vector_dim:
            raise WorkbenchError("--tile and --vector-dim need --layer")
        table = explore.network_mapping(net, plat)
    else:
        layer = net[args.layer]
        if not layer.tiled:
            raise WorkbenchError(f"layer {args.layer!r} is a {layer.kind} layer; the SIMD "
                                 "simulator maps conv and fc layers")
        tile = Tile(*args.tile) if args.tile else Tile(layer.Ox, layer.Oy, layer.Oc // layer.groups,
                                                      layer.On, layer.Kc)
        if args.tile:  # the tile's own rules first: an oversized one is not the registers' fault
            try:
                check_tile(layer, tile)
            except WorkbenchError as exc:
                raise WorkbenchError(f"--tile {' '.join(map(str, args.tile))}: {exc}") from None
        plan = simd.Plan(args.vector_dim, args.unroll) if args.vector_dim else None
        table = simd.mapping_report(layer, tile, plat, plan)
    if args.json:
        print(json.dumps({"rows": json.loads(table.to_json(orient="records"))}))
        return
    print_text(f"{net.name} (batch {net.batch}) on {plat.name}: {plat.simd_lanes} lanes, "
               f"{plat.acc_bits}-bit accumulators")
    print_table(transfer_table(table), args,
                drop_first=("unaligned loads", "redundant psums", "spills", "unroll"))
    print()
    print_table(cycle_table(table), args)


def cmd_codegen(args: argparse.Namespace, net) -> None:
    """Seed 003's code versions, generated and run per layer (`--version`)."""
    if args.layer or args.tile or args.vector_dim:
        raise WorkbenchError("--version reports every conv layer; it takes no --layer, --tile "
                             "or --vector-dim")
    plat = platforms.load_platform(args.platform or "nve")
    versions = VERSIONS if args.version == "all" else (args.version,)
    table = explore.network_codegen(net, plat, versions)
    if args.json:
        print(json.dumps({"rows": json.loads(table.to_json(orient="records"))}))
        return
    print(f"{net.name} (batch {net.batch}) on {plat.name}: generated code run cycle by cycle; "
          f"MAC/cycle of {plat.simd_lanes}")
    print(codegen_table(table).to_string(index=False))


def codegen_table(table: pd.DataFrame) -> pd.DataFrame:
    """Versions side by side (MAC/cycle and share of the peak) when several were run; one
    version's details (cycles, II against MII, conflicts, idle VMAC slots, packing) else."""
    cell = [f"{m:.2f} ({units.fmt_percent(u)})"
            for m, u in zip(table["mac_per_cycle"], table["utilization"], strict=True)]
    shown = table.assign(cell=cell)
    if shown["version"].nunique() > 1:
        wide = shown.pivot(index=["layer", "kernel"], columns="version", values="cell")
        order = [v for v in VERSIONS if v in wide.columns]
        wide = wide[order].reset_index()
        return wide.rename(columns={v: (v if v == "automatic" else f"+{v}") for v in order})
    return pd.DataFrame({
        "layer": shown["layer"], "kernel": shown["kernel"], "programs": shown["programs"],
        "cycles": [units.fmt_count(c) for c in shown["cycles"]],
        "MAC/cycle": shown["cell"], "II": shown["ii"], "MII": shown["mii"],
        "conflicts": shown["conflicts"], "idle MAC slots": shown["idle_slots"],
        "packed": shown["packed"]})


def transfer_table(table: pd.DataFrame) -> pd.DataFrame:
    """Local vector transfers of each layer by cause (they add up to the total), against seed
    000's best case, in human units."""
    shown = table[["layer", "vector_dim", "unroll", *simd.TRANSFER_CAUSES, "total",
                   "model_transfers", "lane_utilization"]]
    lanes = [units.fmt_percent(v) for v in shown["lane_utilization"]]
    shown = units.readable(shown.drop(columns="lane_utilization")).assign(lanes_used=lanes)
    return shown.rename(columns=lambda c: str(c).replace("_", " ")).rename(
        columns={"model transfers": "best case (seed 000)"})


def cycle_table(table: pd.DataFrame) -> pd.DataFrame:
    """Compute cycles of each layer by part (they add up to the total): issue at the
    initiation interval, pipeline fill, loop overhead; the MII and the slot that sets it."""
    whole = [*simd.CYCLE_PARTS, "compute_cycles"]  # cycle counts are whole numbers
    shown = table[["layer", *whole, "mii", "mii_bound_by"]].astype({c: "int64" for c in whole})
    return units.readable(shown).rename(columns={
        "cycles_issue": "issue cycles", "cycles_fill": "pipeline fill", "cycles_loop":
        "loop overhead", "compute_cycles": "compute cycles", "mii": "MII",
        "mii_bound_by": "MII set by"})


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("simd", parents=[common], help="SIMD mapping report per layer")
    add_network(p)
    p.add_argument("--platform", default=None,
                   help="preset name or platform .yaml (default idsp; nve with --version)")
    p.add_argument("--batch", type=positive_int, default=None, help="images per batch (On)")
    p.add_argument("--layer", help="one layer (default: every conv/fc layer at its best tile)")
    p.add_argument("--tile", type=positive_int, nargs=5,
                   metavar=units.TILE_COLUMNS,
                   help="tile of --layer (default: the whole layer)")
    p.add_argument("--vector-dim", choices=simd.VECTOR_DIMS, help="vectorized dimension")
    p.add_argument("--unroll", type=positive_int, default=1, help="output vectors per loop body")
    p.add_argument("--version", choices=(*VERSIONS, "all"),
                   help="seed 003 code generation: generate, run and report each layer's "
                        "utilization under this code version (or all four)")
    p.set_defaults(func=cmd_simd)

"""`workbench simd`: mapping report of a network's layers on the platform's vector unit."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from workbench import explore, layers, platforms, simd
from workbench.errors import WorkbenchError
from workbench.tiling import Tile
from workbench.viz import units


def cmd_simd(args: argparse.Namespace) -> None:
    net = layers.load_network(args.network, batch=args.batch)
    plat = platforms.load_platform(args.platform)
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
        plan = simd.Plan(args.vector_dim, args.unroll) if args.vector_dim else None
        table = simd.mapping_report(layer, tile, plat, plan)
    if args.json:
        print(json.dumps({"rows": json.loads(table.to_json(orient="records"))}))
        return
    print(f"{net.name} (batch {net.batch}) on {plat.name}: {plat.simd_lanes} lanes, "
          f"{plat.acc_bits}-bit accumulators; local vector transfers by cause")
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(units.readable(table).to_string(index=False))


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("simd", parents=[common], help="SIMD mapping report per layer")
    p.add_argument("network", help="zoo name or a .yaml/.onnx/.prototxt file")
    p.add_argument("--platform", default="idsp", help="preset name or platform .yaml")
    p.add_argument("--batch", type=int, default=None, help="images per batch (On)")
    p.add_argument("--layer", help="one layer (default: every conv/fc layer at its best tile)")
    p.add_argument("--tile", type=int, nargs=5, metavar=("TOx", "TOy", "TOc", "TOn", "TKc"),
                   help="tile of --layer (default: the whole layer)")
    p.add_argument("--vector-dim", choices=simd.VECTOR_DIMS, help="vectorized dimension")
    p.add_argument("--unroll", type=int, default=1, help="output vectors per loop body")
    p.set_defaults(func=cmd_simd)

"""`workbench emit`: the mappings `workbench explore` picks, written as C programs; with
--run compiled, run and set beside the model's counts and the bit-true reference."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from workbench import explore, layers
from workbench.cli.args import add_network, memory_kb, output_dir, positive_int
from workbench.cli.explore import platform_of
from workbench.cli.tables import print_table, print_text
from workbench.emit import plan_mappings, run_mapping, write_layer_program
from workbench.emit.c_layer import c_name
from workbench.emit.mapping import LayerMapping
from workbench.errors import WorkbenchError
from workbench.numbers import fmt_count
from workbench.tiling.model import TILE_DIMS


def _formats(path: str | None) -> dict | None:
    if path is None:
        return None
    from workbench.quant import config_from_yaml

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise WorkbenchError(f"--formats {path}: cannot read ({exc.strerror})") from None
    return config_from_yaml(text, path)


def describe(m: LayerMapping) -> str:
    """One line: the layer's split and each share's schedule and tile."""
    parts = "; ".join(f"{s.cores} core(s) {s.schedule} " + " ".join(
        f"{label}={size}" for label, size in zip(TILE_DIMS, s.tile.as_tuple(), strict=True))
        for s in m.shares)
    return (f"{m.layer.name}: split {m.split} over {m.cores} core(s): {parts}; "
            f"{m.fmt.acc_bits}-bit {m.fmt.overflow} accumulator"
            f"{', double buffered' if m.double_buffer else ''}")


def _network(args: argparse.Namespace, net, mappings: list[LayerMapping], out: Path,
             doc: dict) -> list[str]:
    """Write the network program (when the network is a chain the program can run); with
    --images run it on that many held-out MNIST digits beside quant.infer. The names of
    what failed."""
    from workbench.cli.quant import shipped_weights
    from workbench.emit.network import check_network, write_network_program
    from workbench.quant import load_weights

    try:
        check_network(net, mappings)
    except WorkbenchError as exc:
        _say(args, f"network program not written: {exc}")
        doc["network"] = {"written": False, "reason": str(exc)}
        return []
    try:
        weights = args.weights or shipped_weights(net)
    except WorkbenchError:
        weights = None
    params = load_weights(weights, net) if weights else None
    folder = out / "network"
    if not (args.run and args.images):
        write_network_program(net, mappings, params, folder)
        doc["network"] = {"written": True, "folder": str(folder), "weights": bool(params)}
        _say(args, f"network program: wrote {folder}/ (make -C {folder}; ./network DIR "
                   f"IMAGES model|physical)" + ("" if params else "; no weights given, "
                                                "write weights/NAME.w.bin and .b.bin"))
        return []
    if params is None:
        raise WorkbenchError(f"--images: network {net.name!r} has no shipped weights; give "
                             "--weights")
    from workbench.emit.network_run import run_network
    from workbench.quant import mnist

    if tuple(net.layers[0].in_shape) != (1, 28, 28):
        raise WorkbenchError(f"--images runs MNIST digits; {net.name!r} reads "
                             f"{net.layers[0].in_shape}, not (1, 28, 28)")
    x, y = mnist.load("test")
    run = run_network(net, mappings, params, x[:args.images], folder, args.counts)
    same = bool(np.array_equal(run.codes, run.reference))
    acc = float((run.predictions == y[:args.images]).mean())
    agree = float((run.predictions == run.reference_predictions).mean())
    counts = run.measured == run.modelled
    s = run.seconds
    doc["network"] = {"written": True, "folder": str(folder), "images": args.images,
                      "counts": args.counts, "bit_exact": same, "predictions_agree": agree,
                      "accuracy": acc, "counts_equal_trace": counts, "seconds": s}
    _say(args, f"network program on {args.images} held-out digits ({args.counts} counts): "
               f"output codes {'bit-exact with' if same else 'DIFFER from'} quant.infer, "
               f"predictions agree on {agree:.2%}, accuracy {acc:.2%}; counts of every layer "
               f"{'equal' if counts else 'DIFFER from'} the trace's; compile "
               f"{s['compile']:.2f} s, run {s['run']:.2f} s")
    return [] if same and counts else ["network"]


def _halide(args: argparse.Namespace, m: LayerMapping, folder: Path, entry: dict) -> list[str]:
    """The layer as a Halide pipeline: its schedule written to halide_schedule.txt; with
    --run, run on the same codes and checked. The layer's name when a check fails."""
    from workbench.emit.compare import random_operands, reference, trace_counts
    from workbench.emit.halide_path import HalideRefusal, build, check_halide, run_halide

    try:
        check_halide(m)
    except HalideRefusal as exc:
        _say(args, f"  Halide: not expressed: {exc}")
        entry["halide"] = {"expressed": False, "reason": str(exc)}
        return []
    operands = random_operands(m, args.seed)
    if not args.run:
        text = build(m, *operands).schedule
        (folder / "halide_schedule.txt").write_text("\n".join(text) + "\n")
        _say(args, f"  Halide schedule: {folder / 'halide_schedule.txt'}")
        entry["halide"] = {"expressed": True, "schedule": text}
        return []
    codes, text, counts = run_halide(m, *operands, traced=True)
    (folder / "halide_schedule.txt").write_text("\n".join(text) + "\n")
    exact = bool(np.array_equal(codes, reference(m, *operands)))
    model = trace_counts(m, "model")
    same = counts == {"B_in": model["in", 0][0], "B_w": model["w", 0][0]}
    entry["halide"] = {"expressed": True, "schedule": text, "bit_exact": exact,
                       "traced_stores": counts, "equal_model_counts": same}
    _say(args, f"  Halide ({folder / 'halide_schedule.txt'}): output "
               f"{'bit-exact' if exact else 'DIFFERS'}; traced stores into B_in "
               f"{fmt_count(counts.get('B_in', 0))}, B_w {fmt_count(counts.get('B_w', 0))} "
               f"{'equal' if same else 'DIFFER from'} the model's input and weight counts")
    return [] if exact and same else [f"{m.layer.name} (Halide)"]


def _say(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "json", False):
        print_text(text)


def cmd_emit(args: argparse.Namespace) -> None:
    if args.images and (args.layer or not args.run):
        raise WorkbenchError("--images runs the network program: give --run, without --layer")
    net = layers.load_network(args.network, batch=args.batch, input_shape=args.input_shape)
    plat = platform_of(args)
    mappings = plan_mappings(net, plat, args.objective, _formats(args.formats))
    if args.layer:
        names = [m.layer.name for m in mappings]
        unknown = [n for n in args.layer if n not in names]
        if unknown:
            raise WorkbenchError(f"--layer {unknown[0]!r}: not a conv/fc layer of "
                                 f"{net.name!r}; those are " + ", ".join(names))
        mappings = [m for m in mappings if m.layer.name in args.layer]
    out = Path(args.out)
    failed: list[str] = []
    doc: dict = {"network": None, "layers": []}
    for m in mappings:
        folder = out / c_name(m.layer.name)
        _say(args, describe(m))
        entry = {"layer": m.layer.name, "split": m.split, "folder": str(folder),
                 "shares": [{"cores": s.cores, "schedule": s.schedule,
                             "tile": dict(zip(TILE_DIMS, s.tile.as_tuple(), strict=True))}
                            for s in m.shares]}
        doc["layers"].append(entry)
        if not args.run:
            write_layer_program(m, folder)
            _say(args, f"  wrote {folder}/ (make -C {folder}; ./layer model|physical DIR)")
            if args.halide:
                _halide(args, m, folder, entry)
            continue
        run = run_mapping(m, folder, seed=args.seed)
        table = run.table()
        entry |= {"counts": table.to_dict(orient="records"), "bit_exact": run.exact,
                  "counts_equal_trace": run.agrees, "warnings": run.warnings,
                  "seconds": run.seconds}
        if not getattr(args, "json", False):
            if run.warnings:
                print_text("  compiler warnings:\n" + run.warnings.strip())
            print_table(table.map(lambda v: fmt_count(v) if isinstance(v, int) else v), args)
        exact = ", ".join(f"{mode} {'bit-exact' if ok else 'DIFFERS'}"
                          for mode, ok in run.exact.items())
        s = run.seconds
        _say(args, f"  output vs quant.infer (random codes, seed {args.seed}): {exact}; "
                   f"counts {'equal the trace' if run.agrees else 'DIFFER from the trace'}"
                   f" core by core; write {s['write']:.2f} s, compile {s['compile']:.2f} s, "
                   f"run both modes {s['run']:.2f} s")
        if not run.agrees or run.warnings:
            failed.append(m.layer.name)
        if args.halide:
            failed += _halide(args, m, folder, entry)
    if not args.layer:
        failed += _network(args, net, mappings, out, doc)
    if getattr(args, "json", False):
        print(json.dumps(doc, indent=1, default=int))
    sys.stdout.flush()
    if failed:
        raise WorkbenchError("emitted program differs from the model or the reference on "
                             + ", ".join(failed))


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("emit", parents=[common],
                       help="write the chosen layer mappings as C (and run them with --run)")
    add_network(p)
    p.add_argument("--platform", default="idsp", help="preset name or platform .yaml "
                                                      "(single-level)")
    p.add_argument("--memory-kb", type=memory_kb, metavar="KB",
                   help="local memory size in KB (default: the platform's)")
    p.add_argument("--cores", type=positive_int, help="cores (default: the platform's)")
    p.add_argument("--batch", type=positive_int, default=None, help="images per batch (On)")
    p.add_argument("--objective", choices=explore.OBJECTIVES, default="cycles",
                   help="what 'best' means when explore picks each mapping")
    p.add_argument("--layer", action="append", metavar="LAYER",
                   help="emit only this conv/fc layer (repeat)")
    p.add_argument("--formats", metavar="FORMATS.yaml",
                   help="per-layer fixed-point formats (`workbench quantize --out`); default: "
                        "the platform's operand and accumulator widths")
    p.add_argument("--run", action="store_true",
                   help="compile with cc, run in model and physical count modes, and print "
                        "measured counts beside the trace's and the output check")
    p.add_argument("--weights", default=None,
                   help="weights of the network program (.npz; default: the shipped ones)")
    p.add_argument("--images", type=positive_int, default=None,
                   help="with --run: also run the network program on this many held-out "
                        "MNIST digits (a multiple of the batch)")
    p.add_argument("--counts", choices=("model", "physical"), default="physical",
                   help="count mode of the network run (default: %(default)s)")
    p.add_argument("--halide", action="store_true",
                   help="also express each single-core mapping as a Halide schedule "
                        "(halide_schedule.txt); with --run, run it and check it")
    p.add_argument("--seed", type=int, default=0, help="seed of the random operand codes "
                                                       "--run uses (default: %(default)s)")
    p.add_argument("--out", type=output_dir, required=True, help="folder to write into")
    p.set_defaults(func=cmd_emit)

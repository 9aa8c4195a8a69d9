"""`workbench quantize`: the greedy narrow-accumulator search for a network with weights."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pandas as pd

from workbench import layers, quant
from workbench.cli.args import add_network, int_in, output_file, positive_int
from workbench.cli.tables import print_table, print_text
from workbench.errors import WorkbenchError
from workbench.numbers import fmt_bytes
from workbench.paths import data_files
from workbench.quant.weights import load_data_npz
from workbench.report import output
from workbench.schemas.arrays import validate_data


def load_data(spec: str, net: layers.Network) -> dict[str, np.ndarray]:
    """'mnist' (the shipped split) or an .npz with calib_x, calib_y, test_x, test_y (NCHW),
    checked as `quant.weights.load_data_npz` checks them."""
    if spec != "mnist":
        return load_data_npz(spec, net)
    from workbench.quant import mnist

    (cx, cy), (tx, ty) = mnist.load("calib"), mnist.load("test")
    return validate_data({"calib_x": cx, "calib_y": cy, "test_x": tx, "test_y": ty},
                         "data 'mnist'", tuple(net.layers[0].in_shape))


def shipped_weights(net: layers.Network) -> str:
    """The weights that ship for a zoo network (data/weights/<name>_*.npz)."""
    found = data_files("weights", f"{net.name}_*.npz")
    if not found:
        raise WorkbenchError(f"network {net.name!r} has no shipped weights; give --weights "
                             "(.npz or .onnx with initializers)")
    return found[0].name


def cmd_quantize(args: argparse.Namespace) -> None:
    if args.from_model:
        if args.network:
            raise WorkbenchError("give a network or --from-model, not both")
        if args.input_shape:
            raise WorkbenchError("--input-shape applies to a network, not to --from-model")
        from workbench.cli.from_model import cmd_from_model

        cmd_from_model(args)
        return
    if not args.network:
        raise WorkbenchError("give a network (zoo name or file), or --from-model model.onnx")
    net = layers.load_network(args.network, input_shape=args.input_shape)
    own = args.network if str(args.network).lower().endswith(".onnx") else None
    params = quant.load_weights(args.weights or own or shipped_weights(net), net)
    data = load_data(args.data or "mnist", net)
    if args.float_formats:
        float_formats(net, params, data, args)
        return
    n = args.images
    options = quant.SearchOptions(acc_bits=args.acc_bits, bound=args.bound,
                                  overflow=args.overflow, min_bits=args.min_bits, jobs=args.jobs,
                                  progress=not args.json and sys.stderr.isatty())
    res = quant.search(net, params, data["calib_x"], data["calib_x"][:n], data["calib_y"][:n],
                       options)
    test_float = quant.accuracy(net, params, data["test_x"], data["test_y"])
    test_fixed = quant.accuracy(net, params, data["test_x"], data["test_y"], res.config)
    rows = [{"layer": name, "input": str(f.in_fmt), "weights": str(f.w_fmt),
             "output": str(f.out_fmt), "BW(in)+BW(w)": f.in_fmt.bw + f.w_fmt.bw}
            for name, f in res.config.items()]
    summary = {"float_accuracy_search": res.float_accuracy, "fixed_accuracy_search": res.accuracy,
               "float_accuracy_test": test_float, "fixed_accuracy_test": test_fixed}
    if args.json:
        print(json.dumps({"layers": rows, **summary, "acc_bits": args.acc_bits,
                          "bound": args.bound, "overflow": args.overflow}, indent=1))
    else:
        print_text(f"{net.name}: {args.acc_bits}-bit accumulators, {args.bound} bound, "
                   f"{args.overflow}")
        print_table(pd.DataFrame(rows), args)
        print_text(f"accuracy on {len(data['test_y'])} held-out images: float {test_float:.2%}, "
              f"fixed {test_fixed:.2%} (search set: {res.float_accuracy:.2%} -> "
              f"{res.accuracy:.2%})")
    sys.stdout.flush()  # shown before the file is written: a late write error loses nothing
    if args.out:  # the held-out accuracy is what the run reports, so it is what is recorded
        output.write_text(args.out, quant.config_to_yaml(
            res.config, bound=res.bound, float_accuracy=test_float, accuracy=test_fixed,
            test_images=len(data["test_y"]), search_float_accuracy=res.float_accuracy,
            search_accuracy=res.accuracy))


def float_formats(net: layers.Network, params: dict, data: dict,
                  args: argparse.Namespace) -> None:
    """Per-layer held-out accuracy and bytes per image of each float format."""
    from workbench.quant import floats

    names = [n.strip() for n in args.float_formats.split(",") if n.strip()]
    for name in names:
        floats.float_format(name)  # a one-line error for an unknown name, before any work
    x, y = data["test_x"][:args.images], data["test_y"][:args.images]
    base = quant.accuracy(net, params, x, y)
    table = floats.layer_accuracy(net, params, x, y, names)
    sizes = {name: floats.bytes_moved(net, floats.FORMATS[name].bytes) for name in names}
    if args.json:
        print(json.dumps({"float32_accuracy": base, "images": len(y), "accuracy": table,
                          "bytes_per_image": sizes}, indent=1))
        return
    print_text(f"{net.name}: held-out accuracy on {len(y)} images with one layer (its weights "
               f"and the maps it writes) in each format; float32 {base:.2%}")
    frame = pd.DataFrame(table).rename_axis("layer").reset_index()
    print_table(frame.map(lambda v: f"{v:.2%}" if isinstance(v, float) else v), args)
    print_text("bytes per image (weights once, each layer's input and output maps once): "
               + ", ".join(f"{k} {fmt_bytes(v)}" for k, v in sizes.items()))


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("quantize", parents=[common],
                       help="per-layer fixed-point formats for narrow accumulators")
    add_network(p, optional=True)
    p.add_argument("--from-model", metavar="MODEL.onnx",
                   help="a quantized (QDQ or QOperator) ONNX model: run in its own integer "
                        "arithmetic, per layer the accumulators on --data (or generated "
                        "images) and the worst/weights bounds")
    p.add_argument("--weights", default=None,
                   help=".npz (or a name under data/weights) or .onnx with initializers "
                        "(default: an ONNX network's own initializers, the weights shipped "
                        "for a zoo network, e.g. lenet5_mnist.npz)")
    p.add_argument("--acc-bits", type=int_in(2, 62), default=16,
                   help="accumulator width in bits (default: %(default)s)")
    p.add_argument("--bound", choices=quant.BOUNDS, default="data",
                   help="extra integer bits from the worst case, the weights or the measured "
                        "data (default: %(default)s)")
    p.add_argument("--overflow", choices=("wrap", "saturate"), default="wrap",
                   help="accumulator overflow (default: %(default)s)")
    p.add_argument("--min-bits", type=positive_int, default=2,
                   help="fewest bits per group (default: %(default)s)")
    p.add_argument("--data", default=None,
                   help="'mnist' or an .npz with calib_x, calib_y, test_x, test_y (default: "
                        "mnist; with --from-model: none, or an .npz with calib_x [, calib_y])")
    p.add_argument("--images", type=positive_int, default=1000,
                   help="search (or --from-model calibration) images, from the calibration "
                        "set (default: %(default)s)")
    p.add_argument("--float-formats", metavar="F1,F2", default=None,
                   help="instead of the fixed-point search: held-out accuracy per layer in "
                        "each float format (fp16, bf16, fp8-e4m3, fp8-e5m2) and the bytes "
                        "each moves per image")
    p.add_argument("--out", type=output_file,
                   help="write the per-layer configuration and the held-out accuracy to "
                        "this YAML file")
    p.add_argument("--jobs", type=positive_int, default=None,
                   help="worker processes evaluating splits (default: one per core)")
    p.set_defaults(func=cmd_quantize)

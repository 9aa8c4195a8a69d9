"""`workbench quantize`: the greedy narrow-accumulator search for a network with weights."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from workbench import layers, quant
from workbench.errors import FileFormatError, WorkbenchError
from workbench.paths import data_dir


def load_data(spec: str, net: layers.Network) -> dict[str, np.ndarray]:
    """'mnist' (the shipped split) or an .npz with calib_x, calib_y, test_x, test_y (NCHW)."""
    if spec == "mnist":
        from workbench.quant import mnist

        (cx, cy), (tx, ty) = mnist.load("calib"), mnist.load("test")
        data = {"calib_x": cx, "calib_y": cy, "test_x": tx, "test_y": ty}
    else:
        try:
            with np.load(spec) as z:
                data = {k: z[k] for k in ("calib_x", "calib_y", "test_x", "test_y")}
        except (OSError, ValueError, KeyError) as exc:
            raise FileFormatError(f"data file {spec!r}: needs arrays calib_x, calib_y, test_x, "
                                  f"test_y ({exc})") from None
    expected = net.layers[0].in_shape
    if tuple(data["calib_x"].shape[1:]) != tuple(expected):
        raise WorkbenchError(f"data {spec!r}: images are {tuple(data['calib_x'].shape[1:])}, "
                             f"network {net.name!r} expects {tuple(expected)} (C, H, W)")
    return data


def shipped_weights(net: layers.Network) -> str:
    """The weights that ship for a zoo network (data/weights/<name>_*.npz)."""
    found = sorted((data_dir() / "weights").glob(f"{net.name}_*.npz"))
    if not found:
        raise WorkbenchError(f"network {net.name!r} has no shipped weights; give --weights "
                             "(.npz or .onnx with initializers)")
    return found[0].name


def cmd_quantize(args: argparse.Namespace) -> None:
    net = layers.load_network(args.network)
    params = quant.load_weights(args.weights or shipped_weights(net), net)
    data = load_data(args.data, net)
    n = args.images
    res = quant.search(net, params, data["calib_x"], data["calib_x"][:n], data["calib_y"][:n],
                       acc_bits=args.acc_bits, bound=args.bound, overflow=args.overflow,
                       min_bits=args.min_bits, progress=not args.json, jobs=args.jobs)
    test_float = quant.accuracy(net, params, data["test_x"], data["test_y"])
    test_fixed = quant.accuracy(net, params, data["test_x"], data["test_y"], res.config)
    if args.out:  # the held-out accuracy is what the run reports, so it is what is recorded
        Path(args.out).write_text(quant.config_to_yaml(
            res.config, bound=res.bound, float_accuracy=test_float, accuracy=test_fixed,
            test_images=len(data["test_y"]), search_float_accuracy=res.float_accuracy,
            search_accuracy=res.accuracy))
    rows = [{"layer": name, "input": str(f.in_fmt), "weights": str(f.w_fmt),
             "output": str(f.out_fmt), "BW(in)+BW(w)": f.in_fmt.bw + f.w_fmt.bw}
            for name, f in res.config.items()]
    summary = {"float_accuracy_search": res.float_accuracy, "fixed_accuracy_search": res.accuracy,
               "float_accuracy_test": test_float, "fixed_accuracy_test": test_fixed}
    if args.json:
        print(json.dumps({"layers": rows, **summary, "acc_bits": args.acc_bits,
                          "bound": args.bound, "overflow": args.overflow}, indent=1))
        return
    print(f"{net.name}: {args.acc_bits}-bit accumulators, {args.bound} bound, {args.overflow}")
    print(pd.DataFrame(rows).to_string(index=False))
    print(f"accuracy on {len(data['test_y'])} held-out images: float {test_float:.2%}, "
          f"fixed {test_fixed:.2%} (search set: {res.float_accuracy:.2%} -> {res.accuracy:.2%})")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("quantize", parents=[common],
                       help="per-layer fixed-point formats for narrow accumulators")
    p.add_argument("network", help="zoo name or a .yaml/.onnx/.prototxt file")
    p.add_argument("--weights", default=None,
                   help=".npz (or a name under data/weights) or .onnx with initializers "
                        "(default: the weights shipped for a zoo network, e.g. lenet5_mnist.npz)")
    p.add_argument("--acc-bits", type=int, default=16,
                   help="accumulator width in bits (default: %(default)s)")
    p.add_argument("--bound", choices=quant.BOUNDS, default="data",
                   help="extra integer bits from the worst case, the weights or the measured "
                        "data (default: %(default)s)")
    p.add_argument("--overflow", choices=("wrap", "saturate"), default="wrap",
                   help="accumulator overflow (default: %(default)s)")
    p.add_argument("--min-bits", type=int, default=2,
                   help="fewest bits per group (default: %(default)s)")
    p.add_argument("--data", default="mnist",
                   help="'mnist' or an .npz with calib_x, calib_y, test_x, test_y "
                        "(default: %(default)s)")
    p.add_argument("--images", type=int, default=1000,
                   help="search images, from the calibration set (default: %(default)s)")
    p.add_argument("--out", help="write the per-layer configuration and the held-out "
                                 "accuracy to this YAML file")
    p.add_argument("--jobs", type=int, default=None,
                   help="worker processes evaluating splits (default: one per core)")
    p.set_defaults(func=cmd_quantize)

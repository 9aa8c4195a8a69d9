"""`workbench quantize --from-model`: a quantized ONNX model's accumulators, from its own
integer arithmetic (`quant.int_run`), on the user's images (--data) or on a generated
calibration set (images uniform over the float range the model's input quantizer codes),
with the worst-case and weights bounds of that arithmetic beside them; and, where the model
maps onto the workbench's fixed-point formats, those formats' flags."""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.cli.tables import print_table, print_text
from workbench.errors import WorkbenchError
from workbench.layers.onnx_names import short_name
from workbench.numbers import fmt_count
from workbench.quant.weights import read_npz
from workbench.schemas.arrays import validate_data

GENERATED = 16  # images of the generated calibration set (seeded)


def _images(args: argparse.Namespace, shape: list[int], lo: float, hi: float
            ) -> tuple[np.ndarray, np.ndarray | None, bool]:
    """(images, labels or None, generated?)."""
    if args.data:
        if args.data == "mnist":
            from workbench.quant import mnist

            x, y = mnist.load("calib")
            arrays = {"calib_x": x, "calib_y": y}
        else:
            arrays = read_npz(args.data, "data")
        found = validate_data(arrays, f"data {args.data!r}", tuple(shape),
                              calibration_only=True)
        y = found["calib_y"]
        return found["calib_x"][:args.images], None if y is None else y[:args.images], False
    rng = np.random.default_rng(0)
    n = min(args.images, GENERATED)
    return rng.uniform(lo, hi, (n, *shape)).astype(np.float32), None, True


def _bits(value: int) -> int:
    """Two's-complement width holding ±value."""
    return int(value).bit_length() + 1


def model_table(stats: dict, acc_bits: int) -> pd.DataFrame:
    """One row per product layer: the model's own accumulators and the two bounds."""
    rows = [{"layer": short_name(s.name), "op": s.op, "outputs": s.outputs,
             "max_abs_acc": s.max_abs, "overflowing": s.overflowing,
             "data_bits": _bits(s.max_abs), "weights_bits": _bits(s.weights),
             "worst_bits": _bits(s.worst), "acc_bits": acc_bits} for s in stats.values()]
    return pd.DataFrame(rows)


def cmd_from_model(args: argparse.Namespace) -> None:
    """Accumulators of a quantized ONNX model from its own integer arithmetic."""
    from workbench.quant import from_model, int_run

    proto = from_model.read_model(args.from_model)
    shape, lo, hi = int_run.input_range(proto)
    with warnings.catch_warnings(record=True) as caught:  # shown only if the mapping holds
        warnings.simplefilter("always")
        try:
            mapped, unmapped = from_model.load_quantized(args.from_model, args.acc_bits,
                                                         args.overflow), ""
        except WorkbenchError as exc:  # the model's arithmetic still runs: say why not mapped
            mapped, unmapped = None, str(exc).splitlines()[0]
    for w in caught if mapped is not None else ():
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    x, y, generated = _images(args, shape, lo, hi)
    # the model as written (exact registers), its accumulators counted against --acc-bits
    exact, stats = int_run.run_model(args.from_model, x, 64, count_bits=args.acc_bits)
    outputs, _ = int_run.run_model(args.from_model, x, args.acc_bits, args.overflow)
    table = model_table(stats, args.acc_bits)
    first = next(iter(outputs))
    narrow_top, exact_top = outputs[first].reshape(len(x), -1).argmax(1), \
        exact[first].reshape(len(x), -1).argmax(1)
    flags = {} if mapped is None else {n: list(i.flags) for n, i in mapped.layers.items()
                                       if i.flags}
    if mapped is not None:
        flags.update({name: list(f) for name, f in mapped.joins.items() if f})
    summary: dict = {"model": Path(args.from_model).stem,
                     "acc_bits": args.acc_bits, "overflow": args.overflow, "images": len(x),
                     "generated_images": generated, "flags": flags,
                     "unquantized": [] if mapped is None else list(mapped.unquantized),
                     "workbench_formats": "mapped" if mapped is not None else unmapped,
                     "top1_agreement": float((narrow_top == exact_top).mean())}
    if y is not None:
        summary["accuracy"] = float((narrow_top == y).mean())
        summary["exact_accuracy"] = float((exact_top == y).mean())
    if args.json:
        print(json.dumps({**summary, "layers": json.loads(table.to_json(orient="records"))},
                         indent=1))
        return
    _print(summary, table, args)


def _print(summary: dict, table: pd.DataFrame, args: argparse.Namespace) -> None:
    from workbench.viz.units import readable

    source = "generated images (uniform over the input quantizer's range)" \
        if summary["generated_images"] else f"images of {args.data}"
    print_text(f"{summary['model']}: {len(table)} integer product layers run as the model "
               f"computes them, on {fmt_count(summary['images'])} {source}; "
               f"{args.acc_bits}-bit accumulators ({args.overflow})")
    shown = table.assign(overflowing=[f"{o} of {n}" for o, n in zip(
        table.overflowing, table.outputs, strict=True)]).drop(columns=["acc_bits", "outputs"])
    shown = shown.rename(columns={"worst_bits": "worst", "weights_bits": "w-aware",
                                  "data_bits": "data", "max_abs_acc": "max|acc|"})
    print_table(readable(shown), args)
    for name in summary["unquantized"]:
        print_text(f"{name}: not quantized in the model (float input or weights): runs in float")
    for lines in summary["flags"].values():
        for line in lines:
            print_text(f"flag: {line}")
    if summary["workbench_formats"] != "mapped":
        print_text(f"workbench fixed-point formats: not mapped "
                   f"({summary['workbench_formats']})")
    line = (f"top-1 agreement of {args.acc_bits}-bit with exact accumulators "
            f"{summary['top1_agreement']:.1%}")
    if "accuracy" in summary:
        line += (f"; accuracy {summary['accuracy']:.1%} ({args.acc_bits}-bit) vs "
                 f"{summary['exact_accuracy']:.1%} (exact)")
    print_text(line)

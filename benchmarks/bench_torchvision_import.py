"""Benchmark: import every torchvision model that torch's ONNX exporter writes.

For each classification, detection and segmentation model of torchvision (weights=None,
structure only, eval mode), export it with torch's legacy exporter at opset 17 (one image,
224×224; 299 for inception_v3; detection models take a list of one 3×side×side image), then
import it as a user would (`--input-shape` given for detection, where the transform is cut).
Prints one line per model and the counts:
- load: imported, no sub-graph cut;
- cut: imported, with cut sub-graphs (one warning line each);
- refused: a one-line WorkbenchError (its message is printed);
- traceback: any other exception (must be 0);
- export failed: torch could not export it (not the importer's doing).

Needs torch and torchvision, which are not dependencies of the workbench: without them it
prints one line and exits 0. Run: python benchmarks/bench_torchvision_import.py [--only
NAME ...] [--models classification detection segmentation]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
import types
import warnings
from collections import Counter
from pathlib import Path

SIDES = {"inception_v3": 299}
DETECTION_SIDE = 320


def _torchvision():
    for name in ("torchvision._meta_registrations", "torchvision._autograd_registrations"):
        sys.modules.setdefault(name, types.ModuleType(name))
    import torchvision

    return torchvision


def _export(name: str, family: str, path: Path) -> int:
    """Export model `name`; the image side it was fed."""
    import torch

    tv = _torchvision()
    module = {"classification": tv.models, "detection": tv.models.detection,
              "segmentation": tv.models.segmentation}[family]
    kwargs = {"weights": None}
    if family != "classification":
        kwargs["weights_backbone"] = None
    if name in ("googlenet", "inception_v3"):
        kwargs |= {"aux_logits": False, "init_weights": False}
    model = module.__dict__[name](**kwargs).eval()
    side = DETECTION_SIDE if family == "detection" else SIDES.get(name, 224)
    x = [torch.zeros(3, side, side)] if family == "detection" else torch.zeros(1, 3, side, side)
    torch.backends.mha.set_fastpath_enabled(False)
    with torch.no_grad():
        torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=17)
    return side


def _import(path: Path, family: str, side: int) -> tuple[str, str]:
    from workbench import layers
    from workbench.errors import WorkbenchError
    from workbench.layers.onnx_cut import CutWarning

    shape = (3, side, side) if family == "detection" else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            net = layers.load_network(path, input_shape=shape)
        except WorkbenchError as exc:
            return "refused", str(exc).splitlines()[0][:160]
        except Exception:  # noqa: BLE001 - the count this benchmark exists for
            return "traceback", traceback.format_exc().splitlines()[-1][:160]
    cuts = sum(issubclass(w.category, CutWarning) for w in caught)
    return ("cut" if cuts else "load"), f"{net.macs / 1e9:.3f} GMACs, {cuts} cut"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="+",
                        default=["classification", "detection", "segmentation"])
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    try:
        tv = _torchvision()
    except ImportError:
        print("bench_torchvision_import: torch/torchvision not installed; skipped")
        return
    counts: Counter = Counter()
    for family in args.models:
        module = {"classification": tv.models, "detection": tv.models.detection,
                  "segmentation": tv.models.segmentation}[family]
        for name in tv.models.list_models(module=module):
            if args.only and name not in args.only:
                continue
            start = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / f"{name}.onnx"
                try:
                    side = _export(name, family, path)
                except Exception as exc:  # noqa: BLE001 - torch's failure, counted apart
                    outcome, text = "export failed", str(exc).splitlines()[0][:120]
                else:
                    outcome, text = _import(path, family, side)
            counts[outcome] += 1
            print(f"{family:14} {name:34} {outcome:13} {time.perf_counter() - start:6.1f} s  "
                  f"{text}", flush=True)
    print("counts: " + ", ".join(f"{k} {counts[k]}" for k in (
        "load", "cut", "refused", "traceback", "export failed")))


if __name__ == "__main__":
    main()

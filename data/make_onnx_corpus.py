"""Regenerate data/onnx/: structure-only ONNX files of torchvision classification models.

Needs torch and torchvision (not run or test dependencies of the workbench)::

    .venv/bin/pip install torch torchvision
    .venv/bin/python data/make_onnx_corpus.py

Every model is built with weights=None, put in eval mode and exported at batch 1
(inception_v3 at 299×299, the others at 224×224) with torch's legacy (TorchScript) exporter,
which folds BatchNormalization into the convolutions. ResNet-18 is also exported with the
dynamo exporter, unoptimized (data/onnx/variants/resnet18_dynamo.onnx: BatchNormalization
kept, opset 18 ReduceMean), so the tests
can check that both exporters import to the same layers. Then the weight data is stripped:
every floating-point initializer of more than SMALL elements is removed and declared as a graph
input of the same type and shape instead (an "architecture-only" file, kilobytes in size); small
initializers (scalars, shape vectors) stay, since shape inference and the importer read them.
The exporter's graph name (e.g. main_graph) is kept as is: the workbench names a model after its
file.
"""

from __future__ import annotations

import sys
import tempfile
import types
from pathlib import Path

import onnx
from onnx import TensorProto, helper

OUT = Path(__file__).resolve().parent / "onnx"
SMALL = 16  # elements: initializers up to this size stay in the file
MODELS = ("resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
          "shufflenet_v2_x1_0", "squeezenet1_0", "googlenet", "densenet121", "inception_v3")
OPSET = 17


def _torchvision():
    """torchvision's models, importable with a CPU-only torch whose build differs from the one
    torchvision's compiled ops were made for (only the model definitions are needed)."""
    for name in ("torchvision._meta_registrations", "torchvision._autograd_registrations"):
        sys.modules.setdefault(name, types.ModuleType(name))
    from torchvision import models

    return models


def build(name: str):
    """The torchvision model `name`, untrained, in eval mode, and its example input."""
    import torch

    models = _torchvision()
    kwargs = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kwargs |= {"aux_logits": False, "init_weights": False}
    model = getattr(models, name)(**kwargs).eval()
    side = 299 if name == "inception_v3" else 224
    return model, torch.zeros(1, 3, side, side)


def strip_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same graph with large float initializers turned into typed graph inputs."""
    graph = model.graph
    floats = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16)
    keep, moved = [], []
    for init in graph.initializer:
        size = 1
        for d in init.dims:
            size *= d
        if init.data_type in floats and size > SMALL:
            moved.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
        else:
            keep.append(init)
    del graph.initializer[:]
    graph.initializer.extend(keep)
    graph.input.extend(moved)
    del graph.value_info[:]
    for node in graph.node:  # exporter provenance (stack traces with local paths): not needed
        node.doc_string = ""
        del node.metadata_props[:]
    return model


def export(name: str, path: Path, dynamo: bool = False) -> None:
    """Export model `name` to `path` and strip its weights."""
    import torch

    model, x = build(name)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "model.onnx"
        with torch.no_grad():
            if dynamo:
                program = torch.onnx.export(model, (x,), dynamo=True, opset_version=18,
                                            input_names=["input"], output_names=["logits"],
                                            optimize=False)
                program.save(str(raw))
            else:
                torch.onnx.export(model, (x,), str(raw), dynamo=False, opset_version=OPSET,
                                  input_names=["input"], output_names=["logits"])
        proto = onnx.load(str(raw))
    proto = strip_weights(proto)
    exporter = "dynamo" if dynamo else "legacy"
    version = torch.__version__.split("+")[0]
    helper.set_model_props(proto, {
        "source": f"torchvision {name} (weights=None), torch {version} {exporter} exporter, "
                  "structure only"})
    onnx.checker.check_model(proto)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(proto, str(path))
    print(f"{path.relative_to(OUT.parent)}: {path.stat().st_size / 1024:.1f} KiB")


def main() -> None:
    for name in MODELS:
        export(name, OUT / f"{name}.onnx")
    export("resnet18", OUT / "variants" / "resnet18_dynamo.onnx", dynamo=True)


if __name__ == "__main__":
    main()

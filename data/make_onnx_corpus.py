"""Regenerate data/onnx/: structure-only ONNX files of torchvision classification models.

Needs torch and torchvision (not run or test dependencies of the workbench)::

    .venv/bin/pip install torch torchvision
    .venv/bin/python data/make_onnx_corpus.py

data/onnx/transformers/ holds the attention and LayerNorm models of `TRANSFORMERS` (DeiT-S and
a MobileViT-XXS-style network are defined here, the others come from torchvision);
data/onnx/detection/ the whole detection models of `DETECTION` (transform, If, TopK,
NonZero and all), which the importer cuts down to backbone and heads; data/onnx/int8/ the
quantized models of `INT8` (see `export_int8`: these keep their weights, since they are run).
Besides torch and torchvision, the int8 files need onnxruntime (its quantizer).

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
# data/onnx/transformers/: (model, dynamo exporter?) — ViT-B/16 from both exporters, DeiT-S and
# ConvNeXt-T (LayerNormalization), a MobileViT-XXS-style network (attention on unfolded patches)
TRANSFORMERS = (("vit_b_16", False), ("vit_b_16", True), ("deit_small", False),
                ("convnext_tiny", False), ("mobilevit_xxs", False))


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

    if name in DETECTION:
        from torchvision.models import detection

        _torchvision()
        model = getattr(detection, name)(weights=None, weights_backbone=None).eval()
        return model, [torch.zeros(3, DETECTION[name], DETECTION[name])]
    if name in CUSTOM:
        side = SIDES.get(name, 224)  # MobileViT's own input size; the small int8 models'
        torch.manual_seed(0)  # the int8 models keep their weights: the same ones every run
        return CUSTOM[name]().eval(), torch.zeros(1, 3, side, side)
    models = _torchvision()
    kwargs = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kwargs |= {"aux_logits": False, "init_weights": False}
    model = getattr(models, name)(**kwargs).eval()
    side = 299 if name == "inception_v3" else 224
    return model, torch.zeros(1, 3, side, side)


def _deit_small():
    """DeiT-S's shape (Touvron et al. 2021, without the distillation token): ViT with 384
    features, 6 heads, 12 layers, MLP 1536."""
    from torchvision.models.vision_transformer import VisionTransformer

    return VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=6,
                             hidden_dim=384, mlp_dim=1536)


def _mobilevit_xxs():
    """A MobileViT-XXS-style network (Mehta & Rastegari 2022), at 256×256: inverted residuals, then
    MobileViT blocks that unfold 2×2 patches into token sequences, run transformer layers
    (LayerNorm, attention, SiLU MLP) over them and fold them back."""
    import torch
    from torch import nn

    def conv(cin, cout, k=1, s=1, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, *([nn.SiLU()] if act else []))

    class MV2(nn.Module):
        def __init__(self, cin, cout, s, e=2):
            super().__init__()
            mid = cin * e
            self.res = s == 1 and cin == cout
            self.body = nn.Sequential(conv(cin, mid), conv(mid, mid, 3, s, groups=mid),
                                      conv(mid, cout, act=False))

        def forward(self, x):
            return x + self.body(x) if self.res else self.body(x)

    class Attention(nn.Module):
        def __init__(self, d, heads=4):
            super().__init__()
            self.heads, self.qkv, self.out = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x):  # x: [B·P, N, d]
            b, n, d = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(
                2, 0, 3, 1, 4)
            att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
            y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, d)
            return self.out(y)

    class Layer(nn.Module):
        def __init__(self, d, mlp):
            super().__init__()
            self.ln1, self.att = nn.LayerNorm(d), Attention(d)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, mlp), nn.SiLU(), nn.Linear(mlp, d))

        def forward(self, x):
            x = x + self.att(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class MobileViTBlock(nn.Module):
        def __init__(self, c, d, depth, mlp):
            super().__init__()
            self.local = nn.Sequential(conv(c, c, 3), nn.Conv2d(c, d, 1, bias=False))
            self.layers = nn.Sequential(*[Layer(d, mlp) for _ in range(depth)])
            self.ln = nn.LayerNorm(d)
            self.proj, self.fuse = conv(d, c), conv(2 * c, c, 3)

        def forward(self, x):
            y = self.local(x)
            b, d, h, w = y.shape
            t = y.reshape(b, d, h // 2, 2, w // 2, 2).permute(0, 3, 5, 2, 4, 1).reshape(
                b * 4, (h // 2) * (w // 2), d)  # unfold: [B·4 patch pixels, tokens, d]
            t = self.ln(self.layers(t))
            y = t.reshape(b, 2, 2, h // 2, w // 2, d).permute(0, 5, 3, 1, 4, 2).reshape(
                b, d, h, w)  # fold
            return self.fuse(torch.cat([x, self.proj(y)], 1))

    return nn.Sequential(
        conv(3, 16, 3, 2), MV2(16, 16, 1), MV2(16, 24, 2), MV2(24, 24, 1), MV2(24, 24, 1),
        MV2(24, 48, 2), MobileViTBlock(48, 64, 2, 128), MV2(48, 64, 2),
        MobileViTBlock(64, 80, 4, 160), MV2(64, 80, 2), MobileViTBlock(80, 96, 3, 192),
        conv(80, 320), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(320, 1000))


def _mobilenet_v3_small_025():
    """torchvision's MobileNet-v3-small at width ×0.25 with 10 classes (squeeze-and-excitation,
    hard-swish, residual adds), at 96×96."""
    return _torchvision().mobilenet_v3_small(weights=None, width_mult=0.25, num_classes=10)


def _vit_mini():
    """torchvision's ViT at 32×32: 8×8 patches (16 tokens and the class token), 2 layers of 2
    heads, 64 features, MLP 128, 10 classes. torchvision zeroes the head's weights (every
    logit would be 0): they are drawn here like the others."""
    import torch
    from torchvision.models.vision_transformer import VisionTransformer

    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=64, mlp_dim=128, num_classes=10)
    torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    return model


CUSTOM = {"deit_small": _deit_small, "mobilevit_xxs": _mobilevit_xxs,
          "mobilenet_v3_small_025": _mobilenet_v3_small_025, "vit_mini": _vit_mini}
SIDES = {"mobilevit_xxs": 256, "mobilenet_v3_small_025": 96, "vit_mini": 32}
# data/onnx/int8/: model → the (per-channel?, format) forms written, <model>_{pt|pc}_{qdq|qop}
INT8 = {"mobilenet_v3_small_025": ((False, "QDQ"), (True, "QOperator")),
        "vit_mini": ((True, "QDQ"), (False, "QOperator"))}
CALIBRATION = (8, 1)  # images, seed: standard normal calibration images for quantize_static
# data/onnx/detection/: whole torchvision detection models, transform and post-processing
# included (weights=None, weights_backbone=None), fed one image of this side
DETECTION = {"ssdlite320_mobilenet_v3_large": 320, "retinanet_resnet50_fpn": 800,
             "fasterrcnn_resnet50_fpn": 800}


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
        # attention's fused fast path has no ONNX form in the legacy exporter
        torch.backends.mha.set_fastpath_enabled(False)
        with torch.no_grad():
            if dynamo:
                program = torch.onnx.export(model, (x,), dynamo=True, opset_version=18,
                                            input_names=["input"], output_names=["logits"],
                                            optimize=False)
                program.save(str(raw))
            else:
                torch.onnx.export(model, (x,), str(raw), dynamo=False, opset_version=OPSET,
                                  input_names=["input"],
                                  output_names=None if name in DETECTION else ["logits"])
        proto = onnx.load(str(raw))
    proto = strip_weights(proto)
    exporter = "dynamo" if dynamo else "legacy"
    version = torch.__version__.split("+")[0]
    origin = f"{name} of data/make_onnx_corpus.py" if name in CUSTOM else f"torchvision {name}"
    helper.set_model_props(proto, {
        "source": f"{origin} (weights=None), torch {version} {exporter} exporter, "
                  "structure only"})
    onnx.checker.check_model(proto)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(proto, str(path))
    print(f"{path.relative_to(OUT.parent)}: {path.stat().st_size / 1024:.1f} KiB")


def _inline_identities(model: onnx.ModelProto) -> onnx.ModelProto:
    """Identity nodes of initializers (torch's exporter shares equal tensors through them)
    replaced by copies: the quantizer looks for biases among the initializers."""
    inits = {t.name: t for t in model.graph.initializer}
    kept = []
    for node in model.graph.node:
        if node.op_type == "Identity" and node.input[0] in inits:
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[node.input[0]])
            copy.name = node.output[0]
            model.graph.initializer.append(copy)
        else:
            kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return model


def _draw_statistics(model) -> None:
    """Seeded batch-norm statistics and affine terms, and biases, in place of the untrained
    ones (mean 0, variance 1, scale 1, bias 0): the folded convolutions then have biases, as
    trained ones do, and the int8 model's bias codes are not all zero."""
    import torch

    generator = torch.Generator().manual_seed(1)

    def draw(t, low: float, high: float) -> None:
        t.copy_(torch.rand(t.shape, generator=generator) * (high - low) + low)

    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                draw(module.running_mean, -0.2, 0.2)
                draw(module.running_var, 0.5, 1.5)
                draw(module.weight, 0.5, 1.5)
                draw(module.bias, -0.2, 0.2)
            elif isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)) and \
                    module.bias is not None:
                draw(module.bias, -0.2, 0.2)


def export_int8(name: str, folder: Path) -> None:
    """Export model `name` with its (seeded, untrained) weights, let onnxruntime fold its
    shape arithmetic (quant_pre_process), and write each form of `INT8[name]` that
    onnxruntime's quantize_static makes of it: int8 weights and activations, calibrated on
    `CALIBRATION` standard normal images."""
    import numpy as np
    import torch
    from onnxruntime import quantization as ort_q

    model, x = build(name)
    _draw_statistics(model)
    with tempfile.TemporaryDirectory() as tmp:
        raw, ready = Path(tmp) / "model.onnx", Path(tmp) / "ready.onnx"
        torch.backends.mha.set_fastpath_enabled(False)
        with torch.no_grad():
            torch.onnx.export(model, (x,), str(raw), dynamo=False, opset_version=OPSET,
                              input_names=["input"], output_names=["logits"])
        onnx.save(_inline_identities(onnx.load(str(raw))), str(raw))
        ort_q.quant_pre_process(str(raw), str(ready), skip_symbolic_shape=True)

        class Reader(ort_q.CalibrationDataReader):
            def __init__(self) -> None:
                count, seed = CALIBRATION
                rng = np.random.default_rng(seed)
                self.feeds = iter([{"input": rng.standard_normal(tuple(x.shape)).astype(
                    np.float32)} for _ in range(count)])

            def get_next(self):
                return next(self.feeds, None)

        for per_channel, form in INT8[name]:
            path = folder / f"{name}_{'pc' if per_channel else 'pt'}_" \
                            f"{'qdq' if form == 'QDQ' else 'qop'}.onnx"
            path.parent.mkdir(parents=True, exist_ok=True)
            ort_q.quantize_static(str(ready), str(path), Reader(),
                                  quant_format=getattr(ort_q.QuantFormat, form),
                                  per_channel=per_channel,
                                  activation_type=ort_q.QuantType.QInt8,
                                  weight_type=ort_q.QuantType.QInt8)
            proto = onnx.load(str(path))
            version = torch.__version__.split("+")[0]
            helper.set_model_props(proto, {"source": (
                f"{name} of data/make_onnx_corpus.py (seeded untrained weights), torch "
                f"{version} legacy exporter, onnxruntime quantize_static: "
                f"{'per channel' if per_channel else 'per tensor'}, {form}, int8")})
            onnx.save(proto, str(path))
            print(f"{path.relative_to(OUT.parent)}: {path.stat().st_size / 1024:.1f} KiB")


def main() -> None:
    for name in MODELS:
        export(name, OUT / f"{name}.onnx")
    export("resnet18", OUT / "variants" / "resnet18_dynamo.onnx", dynamo=True)
    for name, dynamo in TRANSFORMERS:
        export(name, OUT / "transformers" / f"{name}{'_dynamo' if dynamo else ''}.onnx",
               dynamo=dynamo)
    for name in DETECTION:
        export(name, OUT / "detection" / f"{name}.onnx")
    for name in INT8:
        export_int8(name, OUT / "int8")


if __name__ == "__main__":
    main()

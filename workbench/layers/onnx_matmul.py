"""Matrix products: Gemm, MatMul, QLinearMatMul, MatMulInteger (and QGemm of com.microsoft).

Counting rule (numpy's matmul): the last two dimensions of each operand are the matrix, every
dimension before them is a batch (broadcast between the operands); a product of an R × K by a
K × M matrix costs R·M·K MACs, so a node costs (elements of its output) × K. The model's batch
N is one factor of the leading dimensions, whatever else they hold (tokens, heads): a
[tokens, 1, features] or [tokens, features] operand has tokens rows per image.

- By a constant K × M matrix (a linear layer): a 1×1 convolution over the rows of one image
  (rows = output elements / (N·M)), or an fc layer when there is one row.
- Of two data tensors (attention's Q·Kᵀ and A·V): a non-tiled layer with its exact MACs whose
  operands are both read from memory (`GenericLayer`, inputs = 2).
- A two-operand explicit Einsum costs the product of the sizes of all the indices it names
  (`einsum_macs`), as a non-tiled layer like attention's products.
- Every node's MACs are checked against the product of its inferred shapes; a disagreement
  (an operand shape that does not multiply, a batch that does not divide the rows) is a
  one-line error, never a silent miscount.
"""

from __future__ import annotations

import math
from typing import Any

from workbench.errors import SpecError
from workbench.layers.onnx_context import ImportContext, attrs_of
from workbench.layers.spec import ConvLayer
from workbench.layers.stream_spec import GenericLayer

B_SLOT = {"QLinearMatMul": 3, "QGemm": 3}
BIAS_SLOT = {"Gemm": 2, "QGemm": 6}


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """(output shape, K) of numpy's matmul of shapes a and b (ValueError if they do not
    multiply)."""
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"inner dimensions {a2[-1]} and {b2[-2]} differ")
    batch = []
    for x, y in zip(reversed(a2[:-2]), reversed(b2[:-2]), strict=False):
        if x != y and 1 not in (x, y):
            raise ValueError(f"batch dimensions {x} and {y} do not broadcast")
        batch.append(max(x, y))
    longer = a2[:-2] if len(a2) > len(b2) else b2[:-2]
    batch = [*longer[:len(longer) - len(batch)], *reversed(batch)]
    out = [*batch, a2[-2], b2[-1]]
    if len(a) == 1:
        out.pop(-2)
    if len(b) == 1:
        out.pop(-1)
    return tuple(out), a2[-1]


def _operands(ctx: ImportContext, node: Any, name: str) -> tuple[str, str, tuple, tuple | None]:
    """(A, B, A's shape, B's shape as multiplied: Gemm's transA/transB applied)."""
    where = ctx.where(node, name)
    slot = B_SLOT.get(node.op_type, 1)
    if len(node.input) <= slot or not node.input[0] or not node.input[slot]:
        raise SpecError(f"{where}: needs two operands")
    a, b = node.input[0], node.input[slot]
    a_shape, b_shape = ctx.shape(a, node, name), ctx.g.shapes.get(b)
    if node.op_type in ("Gemm", "QGemm"):
        attrs = attrs_of(node)
        if len(a_shape) != 2 or (b_shape is not None and len(b_shape) != 2):
            raise SpecError(f"{where}: Gemm needs 2-D operands, got {list(a_shape)} and "
                            f"{list(b_shape) if b_shape is not None else '?'}")
        if attrs.get("transA", 0):
            a_shape = a_shape[::-1]
        if b_shape is not None and attrs.get("transB", 0):
            b_shape = b_shape[::-1]
    return a, b, a_shape, b_shape


def convert_matmul(ctx: ImportContext, node: Any, name: str) -> None:
    """Gemm, MatMul, QLinearMatMul, MatMulInteger, QGemm: see the module's counting rule."""
    where = ctx.where(node, name)
    a, b, a_shape, b_shape = _operands(ctx, node, name)
    out = ctx.shape(node.output[0], node, name)
    k = a_shape[-1]
    if b_shape is not None:
        try:
            want, k = matmul_shape(a_shape, b_shape)
        except ValueError as exc:
            raise SpecError(f"{where}: operands {list(a_shape)} and {list(b_shape)} do not "
                            f"multiply ({exc})") from None
        if want != tuple(out):
            raise SpecError(f"{where}: operands {list(a_shape)} × {list(b_shape)} give "
                            f"{list(want)}, but the output's inferred shape is {list(out)}")
    total = math.prod(out) * k  # MACs of the node, all images
    if total % ctx.batch:
        raise SpecError(f"{where}: {total} MACs do not divide into {ctx.batch} images")
    if ctx.g.is_constant(b):
        layer = _linear(ctx, node, name, out, k)
        reads = [a]
    else:
        c, h, w = ctx.maps(node.output[0], node, name)
        ca, ha, wa = ctx.maps(a, node, name)
        reads = ctx.data_inputs(node)
        layer = GenericLayer(name, node.op_type, ca, ha, wa, c, h, w, ctx.batch,
                             inputs=len(reads), macs_per_image=total // ctx.batch)
    if layer.macs != total:  # the layer must count what the shapes multiply to
        raise SpecError(f"{where}: counted {layer.macs} MACs but its shapes {list(a_shape)} × "
                        f"{list(b_shape) if b_shape else '?'} → {list(out)} make {total}")
    slot = BIAS_SLOT.get(node.op_type)
    biased = slot is not None and len(node.input) > slot and bool(node.input[slot])
    ctx.add(layer, node, reads, biased=biased if ctx.g.is_constant(b) else None)
    if ctx.g.is_constant(b):
        ctx.uses_weight(b, node.input[slot] if biased else "")


def _linear(ctx: ImportContext, node: Any, name: str, out: tuple[int, ...],
            k: int) -> ConvLayer:
    """A product by a constant K × M matrix: its rows per image as a 1×1 convolution."""
    where = ctx.where(node, name)
    b_shape = ctx.g.shapes.get(node.input[B_SLOT.get(node.op_type, 1)])
    if b_shape is not None and (len(b_shape) < 2 or math.prod(b_shape[:-2]) != 1):
        raise SpecError(f"{where}: the weight must be a K×M matrix, got {list(b_shape)}")
    m = out[-1] if len(out) else 1
    rows = math.prod(out[:-1]) if len(out) > 1 else 1
    if rows % ctx.batch:
        raise SpecError(f"{where}: {rows} rows of output {list(out)} do not divide into "
                        f"{ctx.batch} images")
    rows //= ctx.batch
    if rows == 1:
        return ConvLayer.fc(name, k, m, On=ctx.batch)
    return ConvLayer(name=name, Ox=rows, Oy=1, Oc=m, On=ctx.batch, Kc=k)


def einsum_macs(equation: str, shapes: list[tuple[int, ...]]) -> int:
    """Multiply-accumulates of an explicit einsum of two operands: the product of the sizes of
    every index either operand names (each combination is one product, summed over the
    indices the output drops). ValueError for other forms (ellipsis, one or three operands,
    sizes that disagree)."""
    text = equation.replace(" ", "")
    if "->" not in text or "." in text:
        raise ValueError("only explicit equations without an ellipsis are counted")
    terms = text.split("->")[0].split(",")
    if len(terms) != 2 or len(shapes) != 2:
        raise ValueError("only two-operand einsums are counted")
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes, strict=True):
        if len(term) != len(shape):
            raise ValueError(f"{term!r} names {len(term)} indices for shape {list(shape)}")
        for index, size in zip(term, shape, strict=True):
            if sizes.setdefault(index, size) != size and 1 not in (size, sizes[index]):
                raise ValueError(f"index {index!r} has sizes {sizes[index]} and {size}")
            sizes[index] = max(sizes[index], size)
    return math.prod(sizes.values())


def convert_einsum(ctx: ImportContext, node: Any, name: str) -> None:
    """A two-operand Einsum (MaxViT's attention): a non-tiled layer with its exact MACs,
    both operands read from memory; any other Einsum is a one-line error."""
    where = ctx.where(node, name)
    equation = attrs_of(node).get("equation", b"")
    equation = equation.decode() if isinstance(equation, bytes) else str(equation)
    operands = [i for i in node.input if i]
    try:
        total = einsum_macs(equation, [ctx.shape(i, node, name) for i in operands])
    except ValueError as exc:
        raise SpecError(f"{where}: einsum {equation!r} is not counted ({exc})") from None
    if total % ctx.batch:
        raise SpecError(f"{where}: {total} MACs do not divide into {ctx.batch} images")
    reads = ctx.data_inputs(node)
    c, h, w = ctx.maps(node.output[0], node, name)
    ca, ha, wa = ctx.maps(operands[0], node, name)
    ctx.add(GenericLayer(name, "Einsum", ca, ha, wa, c, h, w, ctx.batch,
                         inputs=max(1, len(reads)), macs_per_image=total // ctx.batch),
            node, reads)

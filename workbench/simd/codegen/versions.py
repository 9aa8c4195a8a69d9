"""The four code versions of seed 003 §6.3.2 for a layer, compiled and run.

- automatic: one program per output map, coefficients packed 4 per load, the list schedule
  run as the loop body (no overlap between iterations);
- packing: the same with coefficient packing (§5.1);
- modulo: packing, then modulo scheduling (§5.2);
- fusion: output maps that share input maps are fused into one program (§5.3, the greedy of
  `tiling.fmap_fusion.fuse_maps`), whose pixel writes are shared, then packing and modulo
  scheduling as above.

A layer runs as strips 16 output columns wide; each program computes its output maps for one
strip, one output row per iteration. Programs with the same structure (kernel, strides and
how many input maps each output reads) have the same schedule and cycle count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from workbench.errors import WorkbenchError
from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform
from workbench.simd.codegen.graph import LANES, Shape, build_graph, full_chunks
from workbench.simd.codegen.listsched import Schedule, list_schedule
from workbench.simd.codegen.machine import Run, execute
from workbench.simd.codegen.modulo import minimum_ii, modulo_schedule
from workbench.simd.codegen.packing import Packing, pack
from workbench.simd.codegen.program import Program, layout
from workbench.tiling.fmap_fusion import fuse_maps, input_sets, unfused_groups

VERSIONS = ("automatic", "packing", "modulo", "fusion")
INSTRUCTION_BUFFER = 400   # bundles; assumed (seed 003 gives no size), see docs/codegen.md


@dataclass(frozen=True)
class Compiled:
    """One program of a layer: the output maps it computes, the input maps it reads (its
    union, in the program's order), its shape, schedule, packing per output and MII."""

    version: str
    outputs: tuple[int, ...]
    union: tuple[int, ...]
    shape: Shape
    schedule: Schedule
    packing: tuple[Packing, ...]
    mii: int


def check_layer(layer: ConvLayer, platform: Platform) -> None:
    """The layers and platforms the code generator handles; one line naming the rule."""
    if platform.simd_style != "nve" or platform.simd_lanes != LANES:
        raise WorkbenchError(f"platform {platform.name!r}: the code generator targets the "
                             f"NVE ({LANES} lanes, simd_style nve; try --platform nve)")
    if not layer.tiled or layer.kind != "conv":
        raise WorkbenchError(f"layer {layer.name!r}: the code generator maps conv layers")
    if not layer.plain_window:
        raise WorkbenchError(f"layer {layer.name!r}: the code generator needs undilated "
                             "windows with equal start and end padding")
    if layer.Kx - layer.Sx > 7:
        raise WorkbenchError(f"layer {layer.name!r}: kernel width {layer.Kx} at stride "
                             f"{layer.Sx} needs more than the NVE's 7 extra image registers")


def program_groups(layer: ConvLayer, version: str,
                   instruction_buffer: int = INSTRUCTION_BUFFER) -> tuple[tuple[int, ...], ...]:
    """Output maps per program: one each, or fused groups whose VMAC field (an upper bound:
    every output reading the whole union) fits the instruction buffer."""
    if version not in VERSIONS:
        raise WorkbenchError(f"version must be one of {', '.join(VERSIONS)}, got {version!r}")
    if version != "fusion":
        return unfused_groups(layer)
    taps = layer.Kx * layer.Ky
    return fuse_maps(layer, lambda n_in, n_out: n_out * (taps * n_in + 1) <= instruction_buffer)


def _shape(layer: ConvLayer, outputs: tuple[int, ...],
           platform: Platform) -> tuple[Shape, tuple[int, ...]]:
    sets = input_sets(layer)
    union = tuple(sorted(set().union(*(sets[o] for o in outputs))))
    inputs = tuple(tuple(union.index(m) for m in sorted(sets[o])) for o in outputs)
    chunks = tuple(full_chunks(layer.Kx * layer.Ky * len(row)) for row in inputs)
    return Shape(layer.Kx, layer.Ky, layer.Sx, layer.Sy, inputs, chunks,
                 platform.mac_latency), union


def compile_group(layer: ConvLayer, outputs: tuple[int, ...], version: str,
                  platform: Platform) -> Compiled:
    """The program of one group of output maps under a version, with the platform's read
    latency (load_latency) and MAC-to-activation latency (mac_latency)."""
    load_latency = platform.load_latency
    shape, union = _shape(layer, outputs, platform)
    packing: tuple[Packing, ...] = ()
    if version != "automatic":   # each output packed as it would be alone, then combined
        singles = [pack(replace(shape, inputs=(tuple(range(len(row))),), chunks=(c,)),
                        load_latency)[1][0]
                   for row, c in zip(shape.inputs, shape.chunks, strict=True)]
        shape = replace(shape, chunks=tuple(p.chunks for p in singles))
        packing = tuple(singles)
    graph = build_graph(shape)
    schedule = list_schedule(graph, load_latency)
    if version in ("modulo", "fusion"):
        schedule = modulo_schedule(schedule)
    return Compiled(version, outputs, union, shape, schedule, packing,
                    minimum_ii(graph, load_latency))


def compile_layer(layer: ConvLayer, platform: Platform, version: str) -> list[Compiled]:
    """Every program of the layer; programs of one structure are compiled once."""
    check_layer(layer, platform)
    done: dict[tuple, Compiled] = {}
    out = []
    for group in program_groups(layer, version):
        shape, union = _shape(layer, group, platform)
        key = shape.inputs
        if key not in done:
            done[key] = compile_group(layer, group, version, platform)
        out.append(replace(done[key], outputs=group, union=union))
    return out


def strip_inputs(layer: ConvLayer, q_in: np.ndarray, n: int, strip: int,
                 union: tuple[int, ...]) -> np.ndarray:
    """Input codes of one strip of image n: (maps of union, rows, 16·Sx + 8 pixels), zero
    outside the image (padding and the strip's right edge)."""
    width = LANES * layer.Sx + 8
    rows = (layer.Oy - 1) * layer.Sy + layer.Ky
    x0 = strip * LANES * layer.Sx - layer.Px
    out = np.zeros((len(union), rows, width), dtype=np.int64)
    src = np.asarray(q_in)[n][list(union)]
    ys = slice(max(-layer.Py, 0), min(rows - layer.Py, src.shape[1]))
    xs = slice(max(x0, 0), min(x0 + width, src.shape[2]))
    if ys.stop > ys.start and xs.stop > xs.start:
        out[:, ys.start + layer.Py:ys.stop + layer.Py, xs.start - x0:xs.stop - x0] = \
            src[:, ys, xs]
    return out


def coefficients(layer: ConvLayer, c: Compiled, q_w: np.ndarray, q_b: np.ndarray,
                 ) -> list[np.ndarray]:
    """(bias, weights in the program's tap order) per output of the program."""
    per_group = layer.Oc // layer.groups
    out = []
    for o, m in enumerate(c.outputs):
        base = 0 if layer.connections is not None else m // per_group * layer.Kc
        maps = [c.union[p] - base for p in c.shape.inputs[o]]
        taps = np.asarray(q_w)[m][maps].reshape(-1)       # (map, ky, kx) order
        out.append(np.concatenate([[np.asarray(q_b)[m]], taps]).astype(np.int64))
    return out


def run_program(layer: ConvLayer, c: Compiled, platform: Platform, operands: dict,
                n: int = 0, strip: int = 0) -> tuple[Program, Run]:
    """Lay out and execute one program on one strip (all Oy output rows)."""
    program = layout(c.schedule, layer.Oy, platform.local_mem_bytes)
    image = strip_inputs(layer, operands["q_in"], n, strip, c.union)
    run = execute(program, image, coefficients(layer, c, operands["q_w"], operands["q_b"]),
                  platform.acc_bits, platform.overflow)
    return program, run


def layer_outputs(layer: ConvLayer, platform: Platform, version: str,
                  operands: dict) -> np.ndarray:
    """Accumulator codes (On, Oc, Oy, Ox) of the whole layer, every program run on every
    strip of every image (small layers: this is what the bit-exact tests compare)."""
    out = np.zeros((layer.On, layer.Oc, layer.Oy, layer.Ox), dtype=np.int64)
    strips = math.ceil(layer.Ox / LANES)
    for c in compile_layer(layer, platform, version):
        for n in range(layer.On):
            for s in range(strips):
                run = run_program(layer, c, platform, operands, n, s)[1]
                cols = min(LANES, layer.Ox - s * LANES)
                for o, m in enumerate(c.outputs):
                    out[n, m, :, s * LANES:s * LANES + cols] = run.outputs[o, :, :cols]
    return out


def random_operands(layer: ConvLayer, platform: Platform, seed: int = 0) -> dict:
    """Random codes of the platform's widths: q_in (On, C, Iy, Ix), q_w (Oc, Kc, Ky, Kx),
    q_b (Oc,)."""
    rng = np.random.default_rng(seed)
    lo_in, lo_w = 1 << (platform.in_bits - 1), 1 << (platform.w_bits - 1)
    return {"q_in": rng.integers(-lo_in, lo_in, (layer.On, layer.in_maps, layer.Iy, layer.Ix)),
            "q_w": rng.integers(-lo_w, lo_w, (layer.Oc, layer.Kc, layer.Ky, layer.Kx)),
            "q_b": rng.integers(-lo_w, lo_w, layer.Oc)}

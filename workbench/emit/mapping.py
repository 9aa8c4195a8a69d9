"""What is emitted: one conv/fc layer's mapping as `workbench explore` chooses it (a split over
cores and, per share, a seed 000 schedule and tile) with the fixed-point formats it runs in.

Arrays in external memory, the emitted program's and the trace's coordinates alike: input
(n, group, input map within the group, row, column), weights (1, group, output map within the
group, input map, kernel tap), outputs (n, group, output map within the group, row, column);
a dense layer has one group. Elements are counted, not bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from workbench.errors import WorkbenchError
from workbench.layers.network import Network
from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform
from workbench.quant.fixed import FixedFormat
from workbench.quant.infer import LayerFormat
from workbench.tiling.model import SCHEDULES, Tile, check_tile
from workbench.tiling.partition import check_split, shares

MAX_OPERAND_BITS = 31  # operands are int32_t; products and registers fit int64_t
MAX_ACC_BITS = 62


@dataclass(frozen=True, slots=True)
class ShareMapping:
    """The cores of one share shape: how many, their schedule and their tile."""

    cores: int
    schedule: str
    tile: Tile


@dataclass(frozen=True, slots=True)
class LayerMapping:
    """A conv/fc layer split `split` over cores, each share's schedule and tile, and the
    fixed-point formats (`quant.infer.LayerFormat`); `double_buffer`: two buffers per array."""

    layer: ConvLayer
    split: str
    shares: tuple[ShareMapping, ...]
    fmt: LayerFormat
    double_buffer: bool = False

    @property
    def cores(self) -> int:
        return sum(s.cores for s in self.shares)


def check_mapping(m: LayerMapping) -> None:
    """One-line refusal of a mapping the emitter cannot write as it is stated."""
    layer = m.layer
    if not getattr(layer, "tiled", False):
        raise WorkbenchError(f"layer {layer.name!r}: only conv and fc layers are emitted, "
                             f"not {layer.kind!r}")
    if layer.connections is not None:
        raise WorkbenchError(f"layer {layer.name!r}: a sparse connection table is not emitted "
                             "(the trace tiles it as the dense layer)")
    check_split(m.split)
    parts = shares(layer, m.split, m.cores)
    if tuple(p.cores for p in parts) != tuple(s.cores for s in m.shares):
        raise WorkbenchError(f"layer {layer.name!r}: a {m.split!r} split over {m.cores} cores "
                             f"has shares of {[p.cores for p in parts]} cores, got "
                             f"{[s.cores for s in m.shares]}")
    for part, share in zip(parts, m.shares, strict=True):
        if share.schedule not in SCHEDULES:
            raise WorkbenchError(f"unknown schedule {share.schedule!r}; valid: "
                                 + ", ".join(SCHEDULES))
        check_tile(part.layer, share.tile)
    f = m.fmt
    if max(f.in_fmt.bw, f.w_fmt.bw, f.out_fmt.bw) > MAX_OPERAND_BITS:
        raise WorkbenchError(f"layer {layer.name!r}: operands of more than "
                             f"{MAX_OPERAND_BITS} bits are not emitted")
    if not 2 <= f.acc_bits <= MAX_ACC_BITS:
        raise WorkbenchError(f"layer {layer.name!r}: accumulator bits must be in "
                             f"2..{MAX_ACC_BITS}, got {f.acc_bits}")


def platform_format(platform: Platform) -> LayerFormat:
    """Formats for a layer without its own: the platform's operand and accumulator widths,
    half of the operand bits fractional, its overflow rule."""
    bits_in, bits_w = platform.in_bits, platform.w_bits
    return LayerFormat(FixedFormat(bits_in, bits_in // 2), FixedFormat(bits_w, bits_w // 2),
                       FixedFormat(bits_in, bits_in // 2), platform.acc_bits, platform.overflow)


def plan_mappings(net: Network, platform: Platform, objective: str = "cycles",
                  formats: dict[str, LayerFormat] | None = None) -> list[LayerMapping]:
    """The conv/fc mappings `explore.network_plan` picks (fusion off: every map goes through
    external memory, where the emitted program reads and writes it)."""
    from workbench.explore import composed, network_plan

    if composed.applies(platform):
        raise WorkbenchError(f"platform {platform.name!r} has memory levels; emit writes the "
                             "single-level (seed 000) mappings only")
    plan = network_plan(net, platform, objective, fusion="off")
    return [mapping_of(row, layer, platform, (formats or {}).get(layer.name))
            for layer, (_, row) in zip(net.layers, plan.iterrows(), strict=True)
            if layer.tiled]


def mapping_of(row: pd.Series, layer: ConvLayer, platform: Platform,
               fmt: LayerFormat | None) -> LayerMapping:
    """A plan row's mapping: its split and shares ((cores, schedule, tile sizes), ...)."""
    parts = tuple(ShareMapping(int(c), str(s), Tile(*(int(v) for v in t)))
                  for c, s, t in row["shares"])
    return LayerMapping(layer, str(row["split"]), parts, fmt or platform_format(platform),
                        bool(platform.double_buffer))

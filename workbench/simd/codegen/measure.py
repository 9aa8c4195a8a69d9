"""Utilization of a layer's generated code, measured by running it: every distinct program
runs once, cycle by cycle, on one strip of all Oy output rows of random codes; the layer's
cycles are those runs' cycles times the strips and images each program covers (a program's
cycle count does not depend on the data)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from workbench.layers.spec import ConvLayer
from workbench.platforms import Platform
from workbench.simd.codegen.graph import LANES
from workbench.simd.codegen.versions import Compiled, compile_layer, random_operands, run_program


@dataclass(frozen=True)
class LayerRun:
    """One layer under one code version. cycles: all programs on all strips and images;
    macs: the layer's useful MACs; ii/mii/length: per program, the initiation interval, its
    lower bound and one iteration's schedule length; conflicts: port conflicts the list
    scheduler resolved; idle_slots: idle VMAC cycles inside one iteration's schedule;
    packed: outputs whose coefficients found a conflict-free packing, of those packed."""

    layer: str
    version: str
    programs: int
    cycles: int
    macs: int
    ii: tuple[int, ...]
    mii: tuple[int, ...]
    length: tuple[int, ...]
    conflicts: int
    idle_slots: int
    packed: tuple[int, int]
    buffer_words: int

    @property
    def mac_per_cycle(self) -> float:
        """Useful MACs per cycle (seed 003's MAC/instruction; the NVE peaks at 16)."""
        return self.macs / self.cycles

    @property
    def utilization(self) -> float:
        return self.mac_per_cycle / LANES


def measure_layer(layer: ConvLayer, platform: Platform, version: str,
                  seed: int = 0) -> tuple[LayerRun, list[Compiled]]:
    """Run the layer's programs (see the module docstring)."""
    programs = compile_layer(layer, platform, version)
    operands = random_operands_strip(layer, platform, seed)
    runs: dict[tuple, tuple] = {}
    for c in programs:
        if c.shape.inputs not in runs:
            runs[c.shape.inputs] = run_program(layer, c, platform, operands)
    per_program = [runs[c.shape.inputs] for c in programs]
    strips = math.ceil(layer.Ox / LANES) * layer.On
    cycles = sum(run.cycles for _, run in per_program) * strips
    found = [p.found for c in programs for p in c.packing]
    return LayerRun(
        layer=layer.name, version=version, programs=len(programs), cycles=cycles,
        macs=layer.macs, ii=tuple(c.schedule.ii for c in programs),
        mii=tuple(c.mii for c in programs), length=tuple(c.schedule.length for c in programs),
        conflicts=sum(len(c.schedule.conflicts) for c in programs),
        idle_slots=sum(c.schedule.idle_mac_slots() for c in programs),
        packed=(sum(found), len(found)),
        buffer_words=max(p.buffer_words for p, _ in per_program)), programs


def random_operands_strip(layer: ConvLayer, platform: Platform, seed: int) -> dict:
    """Random codes for the first strip of the first image only (the runs read no more)."""
    cols = min(layer.Ox, LANES)
    return random_operands(replace(layer, Ox=cols, On=1), platform, seed)

"""Mappings you can run: a layer mapping as a C99 program with a counting DMA runtime
(docs/emit.md)."""

from workbench.emit.compare import MODES, LayerRun, reference, run_mapping, trace_counts
from workbench.emit.mapping import LayerMapping, ShareMapping, plan_mappings, platform_format
from workbench.emit.program import build, write_layer_program

__all__ = ["MODES", "LayerMapping", "LayerRun", "ShareMapping", "build", "plan_mappings",
           "platform_format", "reference", "run_mapping", "trace_counts",
           "write_layer_program"]

"""VLIW code generation for the NVE (seed 003 §4–5): a task graph per loop iteration, list
scheduling with port-conflict back-off, coefficient packing, modulo scheduling, and the
programs run cycle by cycle. docs/codegen.md describes the model."""

from workbench.simd.codegen.graph import FIELDS, Op, Shape, TaskGraph, build_graph, full_chunks
from workbench.simd.codegen.listsched import Schedule, list_schedule
from workbench.simd.codegen.machine import ProgramError, Run, execute
from workbench.simd.codegen.measure import LayerRun, measure_layer
from workbench.simd.codegen.modulo import minimum_ii, modulo_schedule, recurrence_mii, resource_mii
from workbench.simd.codegen.packing import Packing, pack
from workbench.simd.codegen.program import Program, layout
from workbench.simd.codegen.versions import (
                                             VERSIONS,
                                             Compiled,
                                             compile_group,
                                             compile_layer,
                                             layer_outputs,
                                             random_operands,
)

__all__ = ["FIELDS", "VERSIONS", "Compiled", "LayerRun", "Op", "Packing", "Program",
           "ProgramError", "Run", "Schedule", "Shape", "TaskGraph", "build_graph",
           "compile_group", "compile_layer", "execute", "full_chunks", "layer_outputs",
           "layout", "list_schedule", "measure_layer", "minimum_ii", "modulo_schedule", "pack",
           "random_operands", "recurrence_mii", "resource_mii"]

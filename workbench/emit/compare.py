"""An emitted layer run against the model: measured counts beside the seed 000 trace's in both
modes, and the output codes beside the bit-true reference (`quant.infer.conv_fixed`).

The trace (`tiling.trace_cores`) is the model's executor; per array its DMA transfers are its
logged operations that are transfers (all in model mode; those moving an element in physical
mode, as `tiling.trace` counts them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.emit.c_layer import array_dims
from workbench.emit.mapping import LayerMapping
from workbench.emit.program import ARRAYS, build, run_layer, write_layer_program, write_operands
from workbench.errors import WorkbenchError
from workbench.quant.infer import conv_fixed
from workbench.tiling.trace_cores import trace_cores

MODES = ("model", "physical")
Counted = dict[tuple[str, int], tuple[int, int]]  # (array, core) -> (elements, transfers)


def trace_counts(m: LayerMapping, mode: str) -> Counted:
    """The trace's elements and transfers per array and core."""
    tiles = [s.tile for s in m.shares]
    scheds = [s.schedule for s in m.shares]
    tr = trace_cores(m.layer, m.split, m.cores, tiles, scheds, mode=mode, events=True)
    out: Counted = {}
    for core, c in enumerate(tr.counts):
        per = {"in": c.in_accesses, "w": c.w_accesses, "out": c.out_accesses}
        moves = {a: 0 for a in ARRAYS}
        for e in tr.events:
            if e.core == core and (mode == "model" or e.elements):
                moves[e.array] += 1
        if sum(moves.values()) != c.dma_transfers:
            raise WorkbenchError(f"trace: {sum(moves.values())} logged transfers on core "
                                 f"{core}, {c.dma_transfers} counted")
        for a in ARRAYS:
            out[a, core] = (per[a], moves[a])
    return out


def random_operands(m: LayerMapping, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Input codes (NCHW as the program's (n, group, map, row, column)), weight codes (Oc,
    Kc, Ky, Kx) and bias codes in the accumulator format, uniform over their formats."""
    rng = np.random.default_rng(seed)
    layer, f = m.layer, m.fmt
    dims = array_dims(layer)
    q_in = rng.integers(f.in_fmt.qmin, f.in_fmt.qmax + 1, size=dims["in"])
    q_w = rng.integers(f.w_fmt.qmin, f.w_fmt.qmax + 1, size=(layer.Oc, layer.Kc, layer.Ky,
                                                             layer.Kx))
    acc = f.acc_fmt
    q_b = rng.integers(acc.qmin // 4, acc.qmax // 4 + 1, size=layer.Oc)
    return q_in, q_w, q_b


def reference(m: LayerMapping, q_in: np.ndarray, q_w: np.ndarray, q_b: np.ndarray
              ) -> np.ndarray:
    """The bit-true output codes, in the program's output layout."""
    layer = m.layer
    x = q_in.reshape(layer.On, layer.Kc * layer.groups, layer.Iy, layer.Ix)
    x = np.ascontiguousarray(np.swapaxes(x, 0, 1))  # channel-major
    if layer.kind == "fc":
        x = x.reshape(layer.Kc, layer.On)
    out = conv_fixed(layer, x, q_w, q_b, m.fmt, m.fmt.out_fmt)
    out = np.asarray(out, dtype=np.int64).reshape(layer.Oc, layer.On, layer.Oy, layer.Ox)
    return np.swapaxes(out, 0, 1).reshape(array_dims(layer)["out"])


@dataclass
class LayerRun:
    """One emitted layer compiled and run in both modes."""

    mapping: LayerMapping
    warnings: str
    measured: dict[str, Counted]
    modelled: dict[str, Counted]
    exact: dict[str, bool]             # output equals the reference bit for bit, per mode
    seconds: dict[str, float] = field(default_factory=dict)  # write, compile, run

    def table(self) -> pd.DataFrame:
        """Per array and count mode: elements and transfers the program measured beside the
        trace's (summed over cores)."""
        rows = []
        for a in ARRAYS:
            for mode in MODES:
                row = {"array": a, "counts": mode}
                for what, k in (("elements", 0), ("transfers", 1)):
                    for who, src in (("measured", self.measured), ("trace", self.modelled)):
                        row[f"{who} {what}"] = sum(v[k] for (arr, _), v in src[mode].items()
                                                   if arr == a)
                rows.append(row)
        return pd.DataFrame(rows)

    @property
    def agrees(self) -> bool:
        """Counts equal the trace's, core by core, in both modes, and outputs are exact."""
        return all(self.measured[m] == self.modelled[m] and self.exact[m] for m in MODES)


def run_mapping(m: LayerMapping, folder: Path, seed: int = 0,
                operands: tuple[np.ndarray, ...] | None = None) -> LayerRun:
    """Emit, compile and run `m` in `folder` on random (or given) operand codes."""
    t0 = time.perf_counter()
    write_layer_program(m, folder)
    t1 = time.perf_counter()
    warnings = build(folder, ["main.c", f"{_name(m)}.c"])
    t2 = time.perf_counter()
    q_in, q_w, q_b = operands if operands is not None else random_operands(m, seed)
    write_operands(folder, q_in, q_w, q_b)
    expected = reference(m, q_in, q_w, q_b)
    measured, exact = {}, {}
    for mode in MODES:
        out, counts = run_layer(folder, mode, expected.shape)
        measured[mode] = counts
        exact[mode] = bool(np.array_equal(out, expected))
    t3 = time.perf_counter()
    modelled = {mode: trace_counts(m, mode) for mode in MODES}
    return LayerRun(m, warnings, measured, modelled, exact,
                    {"write": t1 - t0, "compile": t2 - t1, "run": t3 - t2})


def _name(m: LayerMapping) -> str:
    from workbench.emit.c_layer import c_name

    return c_name(m.layer.name)

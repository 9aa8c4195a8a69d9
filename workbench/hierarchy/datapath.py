"""The MAC array below the innermost memory: spatial unrolling and its operand fetches
(seed 001 §4.2: 256 multipliers fed 16 inputs and 256 kernel values per cycle, 16 adder trees
reducing to 16 partial outputs; DianNao's NFU).

A `Datapath` unrolls some of the dimensions X, Y, C, M, N in space: `unroll[d]` lanes along d
(1 when absent). One step (one cycle of a fully pipelined array) runs at most unroll[d]
consecutive indices of every dimension d for one kernel position (FX, FY stay sequential).
Steps partition each innermost block (the block of the innermost memory level, group 0's tile
t0): along d a block takes ⌈t0_d / u_d⌉ steps, the last one partly idle when u_d ∤ t0_d.

Operands of one step, all read from the innermost memory holding each array:
- I: one input per (N, C, Y, X) index of the step, broadcast to the M lanes;
- W: one weight per (M, C) index, shared by the X, Y, N lanes;
- O: one partial sum per (N, M, Y, X) index, the C lanes reduced by an adder tree; it is
  read and written back once per step, as the scalar datapath does once per MAC.
Summed over steps, with P_d the padded extent (a multiple of t0_d) and
s_d = (P_d / t0_d)·⌈t0_d / u_d⌉ the steps along d, K = Kx·Ky:
  fetches_I = K·P_N·P_C·P_Y·P_X·s_M,   fetches_W = K·P_M·P_C·s_X·s_Y·s_N,
  fetches_O = K·P_N·P_M·P_Y·P_X·s_C,   steps = K·Π_d s_d.
(Along a dimension an array depends on, a step's indices summed over the steps of a block give
t0_d: the steps partition it. Along one it does not depend on, each step fetches again.)
With no unrolling every s_d = P_d and each count is the scalar loop nest's K·Π P, which is
what `blocking.transfers` charges a scalar datapath. `blocking.transfers(…, datapath)` charges
the innermost holders these counts (its refills: the steps), `executor.execute(…, datapath)`
counts them by grouping the literal iterations into steps, and `timing` sets the steps against
each level's bandwidth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.errors import SpecError
from workbench.layers.dims import LAYER_DIMS

DIMS = LAYER_DIMS  # blocking.DIMS (not imported from there: levels → here)
DATAPATH_FIELDS = ("unroll", "clock_mhz")


@dataclass(frozen=True, slots=True)
class Datapath:
    """unroll: lanes per dimension {X, Y, C, M, N → lanes ≥ 1} (absent: 1); clock_mhz: optional
    clock for converting steps (cycles) to seconds. ideal_macs_per_cycle (no unroll only; not
    in files): a MAC array whose spatial mapping is not modelled, e.g. the implied hierarchy of
    a platform without levels, of that many MACs per cycle: its operand fetches are the scalar
    datapath's (one per MAC) and `timing` takes steps / ideal_macs_per_cycle cycles, full
    utilization (the seed 000 performance model's compute time)."""

    unroll: Mapping[str, int] = field(default_factory=dict)
    clock_mhz: float | None = None
    ideal_macs_per_cycle: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.unroll, Mapping):
            raise SpecError(f"datapath.unroll: must be a mapping dimension → lanes, got "
                            f"{self.unroll!r}")
        clean = {}
        for dim, lanes in self.unroll.items():
            if dim not in DIMS:
                raise SpecError(f"datapath.unroll: unknown dimension {dim!r}; dimensions: "
                                + ", ".join(DIMS))
            if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
                raise SpecError(f"datapath.unroll.{dim}: must be a whole number ≥ 1, "
                                f"got {lanes!r}")
            clean[dim] = int(lanes)
        object.__setattr__(self, "unroll", dict(sorted(clean.items())))
        if self.clock_mhz is not None and (
                isinstance(self.clock_mhz, bool) or not isinstance(self.clock_mhz, int | float)
                or not math.isfinite(self.clock_mhz) or self.clock_mhz <= 0):
            raise SpecError(f"datapath.clock_mhz: must be a finite number > 0, "
                            f"got {self.clock_mhz!r}")
        ideal = self.ideal_macs_per_cycle
        if ideal is not None and (isinstance(ideal, bool) or not isinstance(ideal, int | float)
                                  or not math.isfinite(ideal) or ideal <= 0 or self.unroll):
            raise SpecError(f"datapath.ideal_macs_per_cycle: must be a finite number > 0 on a "
                            f"datapath without unroll, got {ideal!r} with unroll "
                            f"{dict(self.unroll)}")

    def lanes(self, dim: str) -> int:
        """Lanes along one dimension (1 when not unrolled)."""
        return int(self.unroll.get(dim, 1))

    @property
    def macs_per_step(self) -> int:
        """MAC units: the product of the lanes."""
        return math.prod(self.unroll.values())

    def __hash__(self) -> int:
        return hash((tuple(self.unroll.items()), self.clock_mhz, self.ideal_macs_per_cycle))


SCALAR = Datapath()


def datapath_from_dict(doc: Any, where: str = "datapath") -> Datapath:
    """A Datapath from {unroll: {C: 16, M: 16}, clock_mhz?}; errors name the field path."""
    if not isinstance(doc, dict):
        raise SpecError(f"{where}: must be a mapping with 'unroll', got {doc!r}")
    unknown = sorted(set(map(str, doc)) - set(DATAPATH_FIELDS))
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {unknown}; fields: "
                        + ", ".join(DATAPATH_FIELDS))
    unroll = doc.get("unroll", {})
    if unroll is None:
        unroll = {}
    try:
        return Datapath(unroll=unroll, clock_mhz=doc.get("clock_mhz"))
    except SpecError as exc:
        raise SpecError(str(exc).replace("datapath", where, 1)) from None


def steps_along(padded: Any, inner_tile: Any, lanes: int) -> Any:
    """s_d = (P_d / t0_d)·⌈t0_d / u_d⌉ (ints or numpy arrays)."""
    return (padded // inner_tile) * (-(-inner_tile // lanes))


def fetches(kernel_positions: int, padded: Mapping[str, Any], inner_tile: Mapping[str, Any],
            datapath: Datapath | None = None) -> dict[str, Any]:
    """Operands the datapath reads from the innermost holder of each array, over a whole
    (one-group) layer, and its steps: {'I', 'W', 'O', 'steps'} (elements; steps = cycles).
    kernel_positions = Kx·Ky; padded, inner_tile: P_d and t0_d per dimension (ints or
    broadcasting numpy arrays)."""
    dp = SCALAR if datapath is None else datapath
    k = kernel_positions
    p = {d: padded[d] for d in DIMS}
    s = {d: steps_along(p[d], inner_tile[d], dp.lanes(d)) for d in DIMS}
    return {"I": k * p["N"] * p["C"] * p["Y"] * p["X"] * s["M"],
            "W": k * p["M"] * p["C"] * s["X"] * s["Y"] * s["N"],
            "O": k * p["N"] * p["M"] * p["Y"] * p["X"] * s["C"],
            "steps": k * s["X"] * s["Y"] * s["C"] * s["M"] * s["N"]}


def utilization(kernel_positions: int, padded: Mapping[str, Any],
                inner_tile: Mapping[str, Any], macs: Any,
                datapath: Datapath | None = None) -> Any:
    """Useful MACs over the MAC units' slots: macs / (steps · macs_per_step) (0 … 1)."""
    dp = SCALAR if datapath is None else datapath
    steps = fetches(kernel_positions, padded, inner_tile, dp)["steps"]
    return np.asarray(macs) / (np.asarray(steps) * dp.macs_per_step)

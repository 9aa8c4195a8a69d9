"""Cycles of a blocking on a hierarchy: the datapath against each level's bandwidth
(roofline-style).

- compute: the datapath's steps (cycles of a fully pipelined MAC array, `datapath.fetches`;
  one per MAC for a scalar datapath), × groups; for a datapath with `ideal_macs_per_cycle`
  (an array whose mapping is not modelled) its scalar steps / ideal_macs_per_cycle;
- link of level k (k → its inner neighbours): the elements it sends inwards (I, W loads and O
  partial sums read back) plus the write-backs it receives (O), over every array and every
  holder it feeds (a bypassed level's traffic goes over the link of the level that sends it),
  divided by level k's `bandwidth_elems_per_cycle` (elements of any width; one port shared by
  the three arrays, a split level included). A level without bandwidth is unlimited: its link
  takes no cycles.
- cycles: max(compute, every link), assuming perfect overlap of compute and every transfer
  (double buffering, no stalls); serial_cycles: their sum, the bound with no overlap at all.
  `bound` names the largest part ('compute' or a level's name; ties to compute, then the
  outermost level). Seconds = cycles / clock (datapath.clock_mhz), None without a clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.hierarchy.blocking import Transfer
from workbench.hierarchy.levels import Hierarchy

COMPUTE = "compute"


@dataclass(frozen=True, slots=True)
class Timing:
    """compute_cycles: datapath steps × groups (over ideal_macs_per_cycle when it has one);
    link_elements / link_cycles: per level name
    (outermost first), elements over its inward link and cycles they take (0.0 when its
    bandwidth is unlimited); clock_mhz: the datapath's clock (None: cycles only)."""

    compute_cycles: int | float
    link_elements: dict[str, int]
    link_cycles: dict[str, float]
    clock_mhz: float | None = None

    def parts(self) -> dict[str, float]:
        """Every part's cycles: 'compute' first, then each level's link."""
        return {COMPUTE: float(self.compute_cycles), **self.link_cycles}

    @property
    def cycles(self) -> float:
        """Perfect overlap: the largest part (cycles)."""
        return max(self.parts().values())

    @property
    def serial_cycles(self) -> float:
        """No overlap: the sum of the parts (cycles), an upper bound."""
        return sum(self.parts().values())

    @property
    def bound(self) -> str:
        """The part that sets `cycles`: 'compute' or a level's name."""
        parts = self.parts()
        return max(parts, key=lambda name: parts[name])   # first of equal maxima

    def _seconds(self, cycles: float) -> float | None:
        return None if self.clock_mhz is None else cycles / (self.clock_mhz * 1e6)

    @property
    def seconds(self) -> float | None:
        """`cycles` in seconds at the datapath's clock (None without one)."""
        return self._seconds(self.cycles)

    @property
    def serial_seconds(self) -> float | None:
        return self._seconds(self.serial_cycles)


def datapath_steps(transfers: Sequence[Transfer]) -> int:
    """Steps (cycles) of the datapath over the layer, groups included: its refills."""
    return next(t.refills for t in reversed(transfers) if t.macs is not None)


def link_elements(transfers: Sequence[Transfer], n_levels: int) -> list[int]:
    """Elements over each level's inward link (levels 0 … n_levels−1): for every transfer it
    sources, `moved` (I, W loaded inwards; O written back to it) + `partial_reads` (O sent
    back inwards)."""
    out = [0] * n_levels
    for t in transfers:
        out[t.source] += t.moved + t.partial_reads
    return out


def timing_of(transfers: Sequence[Transfer], hierarchy: Hierarchy) -> Timing:
    """Cycles of the transfers on the hierarchy (see the module docstring)."""
    elements = link_elements(transfers, len(hierarchy))
    names = [level.name for level in hierarchy.levels]
    cycles = {}
    for level, count in zip(hierarchy.levels, elements, strict=True):
        bandwidth = level.bandwidth_elems_per_cycle
        cycles[level.name] = 0.0 if bandwidth is None else count / bandwidth
    dp = hierarchy.datapath
    clock = None if dp is None else dp.clock_mhz
    steps = datapath_steps(transfers)
    if dp is not None and dp.ideal_macs_per_cycle is not None:
        steps = steps / dp.ideal_macs_per_cycle
    return Timing(steps, dict(zip(names, elements, strict=True)), cycles, clock)

"""Per-level accesses, refetch rates, capacity and energy of a blocking's transfers.

Accesses at a level, in elements, by kind: inputs I, weights W, partial sums O_partial and final
outputs O_final. A transfer of I or W from holder s to holder h reads `moved` elements at s and
writes them at h. A transfer of O writes its partial and final write-backs at s (read at h) and
reads its partial sums back at s (written at h). The datapath is the innermost holder of every
array and is not a memory: its side of a transfer costs nothing here (it is the MAC). With an
unrolled datapath (`Hierarchy.datapath`) the innermost holders serve `datapath.fetches` operands
instead of one of each per MAC. DRAM holds the layer's inputs and weights before it runs
(their initial writes are not counted).

Energy per level = Σ_kind (reads + writes) × bits of the kind / access_bits × pJ per access of
the memory holding that array (`Level.access_pj`: energy_pj, or the caller's size-to-energy
rule at that memory's size): accesses narrower or wider than the port are prorated. MAC energy
= loop-nest iterations (blocks at full size) × `Hierarchy.mac_energy_pj`. Buffer bytes: I at
input, W at weight, O at partial-sum width (tiling.dataflow.evaluate's rule). Cycles: the
datapath's steps against each level's bandwidth (`timing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from workbench.errors import WorkbenchError
from workbench.hierarchy.blocking import (
    ARRAYS,
    OPERANDS,
    Blocking,
    Transfer,
    transfers,
    trip_counts,
)
from workbench.hierarchy.levels import BankedCapacity, Hierarchy, SizeEnergy, SplitCapacity
from workbench.hierarchy.timing import Timing, datapath_steps, timing_of
from workbench.layers.spec import ConvLayer

KINDS = ("I", "W", "O_partial", "O_final")
_ARRAY_OF = {"I": "I", "W": "W", "O_partial": "O", "O_final": "O"}


class PrecisionLike(Protocol):
    """Bytes per element of inputs, weights, final outputs and partial sums (what
    tiling.dataflow.Precision and ElementBytes both provide)."""

    inputs: float
    weights: float
    outputs: float
    partial_sums: float


@dataclass(frozen=True, slots=True)
class ElementBytes:
    """Bytes per element; the defaults are tiling.dataflow.Precision's (this package does not
    import workbench.tiling, which would tie it to workbench.platforms)."""

    inputs: float = 1
    weights: float = 1
    outputs: float = 1
    partial_sums: float = 4


@dataclass(frozen=True, slots=True)
class LevelAccesses:
    """Element reads and writes at one hierarchy level, by kind (KINDS order)."""

    level: int
    reads: tuple[int, ...]
    writes: tuple[int, ...]

    def total(self, kind: str | None = None) -> int:
        """Reads + writes of one kind, or of all kinds."""
        kinds = KINDS if kind is None else (kind,)
        return sum(self.reads[KINDS.index(k)] + self.writes[KINDS.index(k)] for k in kinds)


def level_accesses(transfers: Sequence[Transfer], n_levels: int) -> tuple[LevelAccesses, ...]:
    """Accesses of every memory level 0 … n_levels−1 (DRAM first) from the transfers."""
    reads = [[0] * len(KINDS) for _ in range(n_levels + 1)]
    writes = [[0] * len(KINDS) for _ in range(n_levels + 1)]
    idx = {k: i for i, k in enumerate(KINDS)}
    for t in transfers:
        s, h = t.source, t.level
        if t.array in ("I", "W"):
            reads[s][idx[t.array]] += t.moved
            writes[h][idx[t.array]] += t.moved
            continue
        p, f = idx["O_partial"], idx["O_final"]
        writes[s][p] += t.partial_writes
        writes[s][f] += t.final_writes
        reads[s][p] += t.partial_reads
        reads[h][p] += t.partial_writes
        reads[h][f] += t.final_writes
        writes[h][p] += t.partial_reads
    return tuple(LevelAccesses(i, tuple(reads[i]), tuple(writes[i])) for i in range(n_levels))


def refetch_rates(transfers: Sequence[Transfer], array: str) -> dict[int, float]:
    """Seed 001's refetch rate of every level holding `array`, by level index (DRAM 0
    included): elements it passes inwards over elements it received (DRAM: over the array's
    size α), so that the elements a level passes inwards are α × the product of its rate and
    the rates of the levels outside it (seed 001 eq. 1). For O, write-backs received over
    write-backs sent."""
    chain = [t for t in transfers if t.array == array]
    rates = {0: chain[0].moved / chain[0].distinct}
    for outer, inner in zip(chain, chain[1:], strict=False):
        rates[outer.level] = inner.moved / outer.moved
    return rates


def iterations(transfers: Sequence[Transfer]) -> int:
    """Loop-nest iterations of the layer, i.e. its MACs (blocks at full size): the datapath's
    `macs` (a scalar datapath's input fetches)."""
    last = next(t for t in reversed(transfers) if t.array == "I")
    return last.moved if last.macs is None else last.macs


def buffer_bytes(transfers: Sequence[Transfer], n_levels: int,
                 precision: PrecisionLike) -> list[dict[str, float]]:
    """Bytes of each array's buffer at every level (0 where the level does not hold it)."""
    width = {"I": precision.inputs, "W": precision.weights, "O": precision.partial_sums}
    out: list[dict[str, float]] = [dict.fromkeys(ARRAYS, 0.0) for _ in range(n_levels)]
    for t in transfers:
        if t.level < n_levels:
            out[t.level][t.array] = t.buffer * width[t.array]
    return out


def capacity_violations(transfers: Sequence[Transfer], hierarchy: Hierarchy,
                        precision: PrecisionLike) -> list[str]:
    """Why the buffers do not fit the hierarchy's capacities (empty: they fit)."""
    problems = []
    for i, (level, used) in enumerate(zip(hierarchy.levels,
                                          buffer_bytes(transfers, len(hierarchy), precision),
                                          strict=True)):
        if i == 0:
            continue
        if isinstance(level.capacity_bytes, SplitCapacity):
            for array in ARRAYS:
                if used[array] > level.bytes_for(array):
                    problems.append(f"{level.name}: {array} needs {used[array]:g} B of "
                                    f"{level.bytes_for(array):g} B")
        elif isinstance(level.capacity_bytes, BankedCapacity):
            banks = level.capacity_bytes.banks
            for arrays, size in (*banks, *((a, 0) for a in ARRAYS
                                           if all(a not in b for b, _ in banks))):
                need = sum(used[a] for a in arrays)
                if need > size:
                    problems.append(f"{level.name}: {'+'.join(arrays)} "
                                    f"{'needs' if len(arrays) == 1 else 'need'} {need:g} B of "
                                    f"{size:g} B")
        elif sum(used.values()) > level.total_bytes:
            problems.append(f"{level.name}: buffers need {sum(used.values()):g} B of "
                            f"{level.total_bytes:g} B")
    return problems


def energy_pj(transfers: Sequence[Transfer], hierarchy: Hierarchy, precision: PrecisionLike,
              size_energy: SizeEnergy | None = None) -> dict[str, float]:
    """Energy (pJ) by level name, plus 'mac' (see the module docstring)."""
    bits = {"I": 8 * precision.inputs, "W": 8 * precision.weights,
            "O_partial": 8 * precision.partial_sums, "O_final": 8 * precision.outputs}
    out: dict[str, float] = {}
    for level, acc in zip(hierarchy.levels, level_accesses(transfers, len(hierarchy)),
                          strict=True):
        total = 0.0
        for kind in KINDS:
            count = acc.total(kind)
            if count:
                pj = level.access_pj(_ARRAY_OF[kind], size_energy)
                total += count * bits[kind] / level.access_bits * pj
        out[level.name] = total
    out["mac"] = iterations(transfers) * hierarchy.mac_energy_pj
    return out


def energy_by_array_pj(transfers: Sequence[Transfer], hierarchy: Hierarchy,
                       precision: PrecisionLike,
                       size_energy: SizeEnergy | None = None) -> dict[str, dict[str, float]]:
    """`energy_pj`'s memory part split by array: {level name: {I, W, O: pJ}} (seed 001 fig. 5's
    IB / KB / OB bars); each level's three parts add up to its `energy_pj` entry."""
    bits = {"I": 8 * precision.inputs, "W": 8 * precision.weights,
            "O_partial": 8 * precision.partial_sums, "O_final": 8 * precision.outputs}
    out: dict[str, dict[str, float]] = {}
    for level, acc in zip(hierarchy.levels, level_accesses(transfers, len(hierarchy)),
                          strict=True):
        parts = dict.fromkeys(ARRAYS, 0.0)
        for kind in KINDS:
            count = acc.total(kind)
            if count:
                array = _ARRAY_OF[kind]
                parts[array] += count * bits[kind] / level.access_bits * \
                    level.access_pj(array, size_energy)
        out[level.name] = parts
    return out


@dataclass(frozen=True, slots=True)
class HierarchyResult:
    """A blocking priced on a hierarchy: transfers (elements), accesses per level (elements),
    energy by level name and 'mac' (pJ), buffer bytes per level and array, the capacity
    violations (empty when every buffer fits) and the cycle model (`timing.Timing`)."""

    transfers: tuple[Transfer, ...]
    accesses: tuple[LevelAccesses, ...]
    energy_pj: dict[str, float]
    buffer_bytes: tuple[dict[str, float], ...]
    violations: tuple[str, ...]
    timing: Timing | None = None

    @property
    def steps(self) -> int:
        """Datapath steps over the layer, groups included (cycles of compute)."""
        return datapath_steps(self.transfers)

    @property
    def cycles(self) -> float | None:
        """Cycles with compute and transfers overlapped (`Timing.cycles`)."""
        return None if self.timing is None else self.timing.cycles

    @property
    def bound(self) -> str | None:
        """'compute' or the name of the level whose link sets `cycles`."""
        return None if self.timing is None else self.timing.bound

    @property
    def fits(self) -> bool:
        return not self.violations

    @property
    def total_energy_pj(self) -> float:
        return sum(self.energy_pj.values())


def check_steps(layer: ConvLayer, blocking: Blocking, hierarchy: Hierarchy) -> None:
    """Refuse a blocking whose buffer inside group 0 holds less than one datapath step: it
    must enclose group 0's loops (trip count > 1) over the dimensions the datapath unrolls
    among its array's operands (`blocking.step_operands`; the search's `step_bits`)."""
    dp = hierarchy.datapath
    if dp is None or dp.macs_per_step == 1:
        return
    n = trip_counts(layer, blocking)
    group0 = len(blocking.orders[0])
    for array in ARRAYS:
        for level, position in enumerate(blocking.positions(array), start=1):
            if position is None or position >= group0 - 1:
                continue
            for i in range(position + 1, group0):
                name = blocking.orders[0][i]
                if name in OPERANDS[array] and dp.lanes(name) > 1 and n[i] > 1:
                    raise WorkbenchError(
                        f"blocking: the {hierarchy.levels[level].name} buffer of {array} "
                        f"holds less than one datapath step: group 0's {name} loop (trip "
                        f"{n[i]}, {dp.lanes(name)} lanes) lies outside it (a buffer inside "
                        f"group 0 must enclose the loops its array's step spans)")


def evaluate(layer: ConvLayer, blocking: Blocking, hierarchy: Hierarchy,
             precision: PrecisionLike | None = None,
             size_energy: SizeEnergy | None = None) -> HierarchyResult:
    """Counts, accesses, energy, capacity check and cycles of one blocking on one hierarchy
    and its datapath (precision: bytes per element, default ElementBytes()); a buffer inside
    group 0 that holds less than a datapath step is refused (`check_steps`)."""
    precision = ElementBytes() if precision is None else precision
    check_steps(layer, blocking, hierarchy)
    moved = transfers(layer, blocking, len(hierarchy), hierarchy.datapath)
    return HierarchyResult(moved, level_accesses(moved, len(hierarchy)),
                           energy_pj(moved, hierarchy, precision, size_energy),
                           tuple(buffer_bytes(moved, len(hierarchy), precision)),
                           tuple(capacity_violations(moved, hierarchy, precision)),
                           timing_of(moved, hierarchy))

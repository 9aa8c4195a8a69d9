"""Co-design of a memory hierarchy and every layer's blocking (seed 001 §3.6, fig. 7): the
hierarchy, from a stated grid of level sizes, that minimizes a network's total energy within
an on-chip capacity or area budget, and the energy–cost Pareto curve.

The space covered, exactly. A `DesignSpace` (`codesign_space`) is DRAM (a fixed `Level`) plus
on-chip level slots, outermost first; slot k offers a tuple of candidate capacities: bytes
(shared by I, W, O), a `SplitCapacity` (fixed per-array parts, e.g. DianNao's 2/32/2 KB) or
None (the slot is absent, so one space holds hierarchies of several depths). A hierarchy is one
choice per slot whose totals do not increase inwards, with at least one on-chip level; every
such hierarchy is evaluated (`gen_hierarchies`). Access energy of each on-chip memory is
derived from its size by the caller's `size_energy` rule (e.g. seed 001 table 3). For one
hierarchy, each layer's blocking is `search.search`'s exact optimum over its space S (every
divisor chain of tiles; every choice of the levels holding each array; per level a loop order
of its group and a buffering position per held array inside it, the innermost level's also
inside group 0; the hierarchy's datapath included), or `search_fn`'s; since the hierarchy is
shared by all layers and nothing couples the layers' blockings, the network's minimum energy on
that hierarchy is the sum of the per-layer minima. Per-(layer, hierarchy) results are memoized,
so a slider or a second budget reprices nothing. Not covered: sizes off the grid, a level's
buffers in two roles' groups (see `search`), the seed's shifting register files.

This replaces seed 001's two-step method (each layer's 10 best design points, then common
points) by enumeration: no design on the grid is missed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from workbench.errors import WorkbenchError
from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import (
    KINDS,
    ElementBytes,
    HierarchyResult,
    PrecisionLike,
    evaluate,
)
from workbench.hierarchy.blocking import Blocking
from workbench.hierarchy.codesign_space import (  # re-exported: callers import them here
    Capacity,
    DesignSpace,
    LevelSlot,
    capacity_text,
    describe,
    on_chip_area_mm2,
    on_chip_bytes,
    scaled_capacity,
    space_around,
)
from workbench.hierarchy.levels import Hierarchy, SizeEnergy
from workbench.hierarchy.search import NoFitError, SearchResult, search, sliced
from workbench.layers.spec import ConvLayer
from workbench.memo import Caches

AXES = ("capacity", "area")
WARM = 12  # memoized optima of a layer offered to its next search as incumbents
SearchFn = Callable[[ConvLayer, Hierarchy, PrecisionLike, SizeEnergy | None], SearchResult]


def table3_energy_pj(size_bytes: int, width_bits: int) -> float:
    """pJ per access of `width_bits` to a memory of `size_bytes`: seed 001 table 3 (pJ per 16
    bits, `platforms.memory_energy_pj_per_16b`) × width_bits / 16; a `size_energy` rule."""
    from workbench.platforms import memory_energy_pj_per_16b

    return memory_energy_pj_per_16b(size_bytes, width_bits) * width_bits / 16


@dataclass(frozen=True, slots=True)
class Design:
    """A hierarchy with every layer's best blocking: energies in pJ (per layer and total),
    mac_energy_pj the network's MAC part of the total, capacity in bytes, area in mm²."""

    hierarchy: Hierarchy
    energy_pj: float
    layer_energy_pj: tuple[float, ...]
    blockings: tuple[Blocking, ...]
    mac_energy_pj: float
    capacity_bytes: int
    area_mm2: float | None

    def cost(self, axis: str) -> float:
        """On-chip capacity (bytes) or area (mm²)."""
        if axis == "capacity":
            return float(self.capacity_bytes)
        if axis == "area":
            if self.area_mm2 is None:
                raise WorkbenchError(f"hierarchy {self.hierarchy.name!r}: an area budget "
                                     "needs area_mm2_per_kb on every on-chip level")
            return self.area_mm2
        raise WorkbenchError(f"unknown cost axis {axis!r}; valid: {', '.join(AXES)}")

    @property
    def memory_to_compute(self) -> float:
        """Memory energy over MAC energy (inf when MACs cost nothing)."""
        memory = self.energy_pj - self.mac_energy_pj
        return memory / self.mac_energy_pj if self.mac_energy_pj else math.inf


@dataclass
class Codesigner:
    """Prices hierarchies for a network, memoizing each (layer, hierarchy) search; `caches`:
    what its searches keep for later ones (`hierarchy.search`), shared by its copies."""

    layers: tuple[ConvLayer, ...]
    precision: PrecisionLike = field(default_factory=ElementBytes)
    size_energy: SizeEnergy | None = None
    search_fn: SearchFn = search
    _memo: dict = field(default_factory=dict, repr=False)
    _infeasible: set = field(default_factory=set, repr=False)
    _rows: dict = field(default_factory=dict, repr=False)  # `traffic_rows` per layer result
    ran: int = field(default=0, repr=False)  # searches run by this designer itself
    caches: Caches = field(default_factory=Caches, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.layers = tuple(self.layers)
        if not self.layers:
            raise WorkbenchError("co-design needs at least one conv or fc layer")

    def with_layers(self, network_layers: Sequence[ConvLayer]) -> Codesigner:
        """A designer for other layers sharing this one's memo (searches done are reused)."""
        return Codesigner(tuple(network_layers), self.precision, self.size_energy,
                          self.search_fn, self._memo, self._infeasible, caches=self.caches)

    @property
    def searches(self) -> int:
        """(layer, hierarchy) searches done so far (feasible ones)."""
        return len(self._memo)

    @staticmethod
    def _key(layer: ConvLayer, hierarchy: Hierarchy) -> tuple:
        return layer, hierarchy.levels, hierarchy.mac_energy_pj, hierarchy.datapath

    def known(self, hierarchy: Hierarchy) -> bool:
        """Whether every layer's result on the hierarchy is memoized (found or infeasible)."""
        return all(self.known_layer(lay, hierarchy) for lay in self.layers)

    def known_layer(self, layer: ConvLayer, hierarchy: Hierarchy) -> bool:
        """Whether the layer's result on the hierarchy is memoized (found or infeasible)."""
        key = self._key(layer, hierarchy)
        return key in self._memo or key in self._infeasible

    def absorb(self, layer: ConvLayer, hierarchy: Hierarchy,
               result: SearchResult | None) -> None:
        """Take a layer's result searched elsewhere (`prefetch`; None: no blocking fits); a
        result memoized here already is kept."""
        key = self._key(layer, hierarchy)
        if result is None:
            self._infeasible.add(key)
        else:
            self._memo.setdefault(key, result)

    def _hint(self, layer: ConvLayer, hierarchy: Hierarchy) -> dict:
        """The default search starts from the layer's optima on the hierarchies of as many
        levels priced last (an upper bound only: the answer is the same), with this
        designer's caches."""
        return {} if self.search_fn is not search else {"caches": self.caches, "incumbents": [
            r.blocking for k, r in reversed(self._memo.items())
            if k[0] == layer and len(k[1]) == len(hierarchy.levels)][:WARM]}

    def layer_result(self, layer: ConvLayer, hierarchy: Hierarchy) -> SearchResult | None:
        """The layer's best blocking on the hierarchy (None: no blocking fits)."""
        key = self._key(layer, hierarchy)
        if key in self._infeasible:
            return None
        if key not in self._memo:
            interrupt.check()  # a safe point before each search (`interrupt`)
            self.ran += 1
            try:
                self._memo[key] = self.search_fn(layer, hierarchy, self.precision,
                                                 self.size_energy,
                                                 **self._hint(layer, hierarchy))
            except NoFitError:
                self._infeasible.add(key)
                return None
        return self._memo[key]

    def shares(self, layer: ConvLayer, hierarchy: Hierarchy) -> bool:
        """Whether the layer's search can be shared between processes (`layer_share`): the
        default search, of a `sliced` layer, not memoized."""
        return self.search_fn is search and not self.known_layer(layer, hierarchy) and \
            sliced(layer, hierarchy)

    def layer_share(self, layer: ConvLayer, hierarchy: Hierarchy, share: tuple[int, int],
                    found: Sequence[SearchResult | None] = ()) -> SearchResult | None:
        """Share (k, n) of the layer's search (`search`: its slices k, k + n, ...; not
        memoized): the least blocking there or the start, None if neither. `found`: other
        shares' answers, started from (their blockings fit: an upper bound only)."""
        self.ran += 1
        hint = self._hint(layer, hierarchy).get("incumbents", [])
        return search(layer, hierarchy, self.precision, self.size_energy, share=share,
                      incumbents=[*(r.blocking for r in found if r is not None), *hint],
                      caches=self.caches)

    def absorb_shares(self, layer: ConvLayer, hierarchy: Hierarchy,
                      found: Sequence[SearchResult | None]) -> None:
        """Memoize the least of every share's answer (`layer_share`): the optimum."""
        found = [r for r in found if r is not None]
        self.absorb(layer, hierarchy, min(found, key=lambda r: r.energy_pj) if found else None)

    def design(self, hierarchy: Hierarchy) -> Design | None:
        """The network on the hierarchy (None when some layer fits no blocking)."""
        found = [self.layer_result(layer, hierarchy) for layer in self.layers]
        if any(r is None for r in found):
            return None
        energies = tuple(r.energy_pj for r in found)
        macs = sum(layer.macs for layer in self.layers) * hierarchy.mac_energy_pj
        return Design(hierarchy, float(sum(energies)), energies,
                      tuple(r.blocking for r in found), float(macs),
                      on_chip_bytes(hierarchy), on_chip_area_mm2(hierarchy))

    def traffic_rows(self, design: Design) -> list[dict[str, str | float]]:
        """Per layer and level (DRAM first, then 'MAC'): element accesses (reads + writes) by
        kind I, W, O_partial, O_final, energy (pJ) and energy per MAC (pJ), from `evaluate`
        of the design's blockings."""
        rows: list[dict[str, str | float]] = []
        for layer, blocking in zip(self.layers, design.blockings, strict=True):
            key = (self._key(layer, design.hierarchy), blocking)  # an edit shown again
            if key not in self._rows:
                self._rows[key] = traffic_rows(layer, evaluate(
                    layer, blocking, design.hierarchy, self.precision, self.size_energy),
                    design.hierarchy)
            rows += [dict(row) for row in self._rows[key]]
        return rows

    def designs(self, space: DesignSpace) -> list[Design]:
        """Every feasible design of the grid."""
        out = [self.design(h) for h in space.gen_hierarchies()]
        return [d for d in out if d is not None]


def traffic_rows(layer: ConvLayer, result: HierarchyResult,
                 hierarchy: Hierarchy) -> list[dict[str, str | float]]:
    """One layer's `evaluate` result as rows per level (DRAM first, then 'MAC'): element
    accesses (reads + writes) by kind I, W, O_partial, O_final, energy (pJ), pJ per MAC."""
    rows: list[dict[str, str | float]] = []
    for level, acc in zip(hierarchy.levels, result.accesses, strict=True):
        rows.append({"layer": layer.name, "level": level.name,
                     **{kind: acc.total(kind) for kind in KINDS},
                     "energy_pj": result.energy_pj[level.name],
                     "pj_per_mac": result.energy_pj[level.name] / layer.macs})
    mac = result.energy_pj["mac"]
    rows.append({"layer": layer.name, "level": "MAC", **dict.fromkeys(KINDS, 0),
                 "energy_pj": mac, "pj_per_mac": mac / layer.macs})
    return rows


def pareto_front(designs: Sequence[Design], axis: str = "capacity") -> list[Design]:
    """The designs no other design beats on both cost and energy (≤ both, < one), by rising
    cost; of designs equal in both, the first one given."""
    ranked = sorted(enumerate(designs), key=lambda p: (p[1].cost(axis), p[1].energy_pj, p[0]))
    front: list[Design] = []
    for _, design in ranked:
        if not front or design.energy_pj < front[-1].energy_pj:
            front.append(design)
    return front


def best_within(designs: Sequence[Design], budget: float | None,
                axis: str = "capacity") -> Design | None:
    """The least-energy design whose cost is within the budget (None: none is); ties to the
    cheaper, then the first given."""
    ok = [(d.energy_pj, d.cost(axis), i, d) for i, d in enumerate(designs)
          if budget is None or d.cost(axis) <= budget]
    return min(ok, key=lambda t: t[:3])[3] if ok else None


@dataclass(frozen=True, slots=True)
class CodesignResult:
    """All feasible designs of the grid, the Pareto front (rising cost) and the best design
    within the budget (None without a feasible one)."""

    designs: tuple[Design, ...]
    pareto: tuple[Design, ...]
    best: Design | None
    axis: str
    budget: float | None


def codesign(network_layers: Sequence[ConvLayer], space: DesignSpace,
             budget: float | None = None, axis: str = "capacity",
             precision: PrecisionLike | None = None, size_energy: SizeEnergy | None = None,
             designer: Codesigner | None = None) -> CodesignResult:
    """Co-design over the grid: budget in bytes (axis 'capacity') or mm² (axis 'area') of
    on-chip memory, None for no budget; pass a `designer` to reuse its memo."""
    if axis not in AXES:
        raise WorkbenchError(f"unknown cost axis {axis!r}; valid: {', '.join(AXES)}")
    if designer is None:
        designer = Codesigner(tuple(network_layers),
                              ElementBytes() if precision is None else precision, size_energy)
    space.check_priced(designer.size_energy)
    designs = tuple(designer.designs(space))
    if not designs:
        raise WorkbenchError("co-design: no hierarchy of the grid fits every layer")
    return CodesignResult(designs, tuple(pareto_front(designs, axis)),
                          best_within(designs, budget, axis), axis, budget)


__all__ = ["AXES", "WARM", "Capacity", "CodesignResult", "Codesigner", "Design", "DesignSpace",
           "LevelSlot", "SearchFn", "best_within", "capacity_text", "codesign", "describe",
           "on_chip_area_mm2", "on_chip_bytes", "pareto_front", "scaled_capacity",
           "space_around", "table3_energy_pj", "traffic_rows"]

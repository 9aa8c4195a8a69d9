"""Lower bounds on the innermost level's energy kept from one search of a layer for the next
(`search` on another hierarchy: the app's level-size edits; docs/search.md, "Lifted and kept
bounds"), so that points whose total cannot beat the best energy are dropped before
the compiled kernel prices them.

What is kept, per point of the layer's tile grid (all chain combinations): a lower bound L on
E_c, the innermost level's least fitting energy (pJ, one group) under the coefficients c (pJ
per bit of each held array's transfer into it), as `search.kernel.least_total` leaves it. E
depends on the level's capacity, the arrays it holds, the layer, lanes and widths, and on c;
nothing else. Two rules carry a bound to another search of the layer:
- coefficients: E_c' = min over fitting placements of Σ_A c'_A·u_A (u_A ≥ 0: the transfer's
  unit cost; fits do not depend on c) ≥ ρ·E_c with ρ = min over A (c_A > 0) of c'_A / c_A;
- capacity: a level at least as large (each part or bank, when split or banked) fits every
  placement a smaller one fits, so its E is at most the smaller one's: a bound kept at
  capacity ≥ ours holds.
Bounds are multiplied by SLACK = 1 − 1e−12 when carried: ρ·L is a float product, and a
rounding of it must not lift a bound above the energy the kernel computes (its relative
error is a few ulps, 1e−16 each). Kept only for layers of one slice (≤ `tuning.SMALL`
points), as sorted grid indices and bounds, at most `tuning.KEPT_BYTES`, least recently used
dropped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from workbench.hierarchy.blocking import DIMS
from workbench.hierarchy.levels import Hierarchy, capacity_banks
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.placements import unrolled_dims

SLACK = 1.0 - 1e-12

def _scale(to: np.ndarray, frm: np.ndarray) -> float:
    """ρ·SLACK, ρ = min over A (frm_A > 0) of to_A / frm_A (0 when no frm_A > 0)."""
    live = frm > 0
    return float(np.min(to[live] / frm[live])) * SLACK if live.any() else 0.0


def _at(at: np.ndarray, bounds: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The kept bounds at grid indices `points` (NaN where none is kept)."""
    out = np.full(len(points), np.nan)
    if len(at):
        where = np.minimum(np.searchsorted(at, points), len(at) - 1)
        hit = at[where] == points
        out[hit] = bounds[where[hit]]
    return out


class KeptBounds:
    """The innermost level's bounds kept across searches, at most `tuning.KEPT_BYTES`: (layer,
    on-chip levels, lanes, widths, held, banks) → {(tag, capacities): (coefficients, at,
    bounds)}; tag: the held arrays' sources; at: sorted grid indices; bounds: pJ at them.
    Thread-safe; one per `Caches` (`search.context.SearchMemo`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple, dict[tuple, tuple[np.ndarray, np.ndarray,
                                                         np.ndarray]]] = OrderedDict()

    @property
    def nbytes(self) -> int:
        with self._lock:
            return self._bytes()

    def _bytes(self) -> int:
        return sum(at.nbytes + b.nbytes for entries in self._kept.values()
                   for _, at, b in entries.values())

    def entries(self, key: tuple) -> list[tuple[tuple, tuple]]:
        """The ((tag, capacities), (coefficients, at, bounds)) kept under `key`."""
        with self._lock:
            return list(self._kept.get(key, {}).items())

    def get(self, key: tuple, sub: tuple) -> tuple | None:
        with self._lock:
            return self._kept.get(key, {}).get(sub)

    def put(self, key: tuple, sub: tuple, value: tuple) -> None:
        """Keep `value` under key and sub (the newest of a key last; `tuning.PER_KEY` per key, the
        least recently kept keys dropped past `tuning.KEPT_BYTES`)."""
        with self._lock:
            entries = self._kept.setdefault(key, {})
            entries.pop(sub, None)
            entries[sub] = value
            while len(entries) > tuning.PER_KEY:
                entries.pop(next(iter(entries)))
            self._kept.move_to_end(key)
            while self._bytes() > tuning.KEPT_BYTES and len(self._kept) > 1:
                self._kept.popitem(last=False)

    def __len__(self) -> int:
        """Entries kept, over every key."""
        with self._lock:
            return sum(len(entries) for entries in self._kept.values())


class InnerMemory:
    """One search's view of the kept bounds: `raise_floor` where it prices, `note` what its
    kernel found, `keep` at its end. `shape`: chains per dimension (DIMS order)."""

    def __init__(self, layer, hierarchy: Hierarchy, shape: tuple[int, ...],
                 precision, kept: KeptBounds) -> None:
        self.kept = kept
        on_chip = len(hierarchy.levels) - 1
        self.level = hierarchy.levels[on_chip]
        self.base = (layer, on_chip, unrolled_dims(hierarchy.datapath),
                     (precision.inputs, precision.weights, precision.outputs,
                      precision.partial_sums))
        self.shape = shape
        self._noted: dict[tuple, tuple[np.ndarray, list, list]] = {}
        self._looked: tuple[np.ndarray, dict] | None = None  # `raise_floor`'s lookups

    def _caps(self, held: tuple[str, ...]) -> tuple[float, ...]:
        return capacity_banks(self.level, held)[1]

    def _key(self, held: tuple[str, ...]) -> tuple:
        """Where the bounds of a level holding `held` are kept: with how it shares its bytes
        (which held arrays share a bank), so that only like levels' bounds are compared."""
        return (*self.base, held, capacity_banks(self.level, held)[0])

    def flat(self, chain_at: dict) -> np.ndarray:
        """The points' indices in the layer's grid of chain combinations."""
        return np.ravel_multi_index(tuple(chain_at[d] for d in DIMS), self.shape)

    def _chosen(self, held: tuple[str, ...]) -> list[tuple[np.ndarray, np.ndarray,
                                                             np.ndarray]]:
        """The kept entries (coefficients, grid indices, bounds) that hold here: per tag, the
        one of the smallest capacity at least ours (the largest energies: E does not grow
        with the capacity)."""
        caps = self._caps(held)
        chosen: dict = {}
        for (tag, at), v in self.kept.entries(self._key(held)):
            if all(x >= y for x, y in zip(at, caps, strict=True)) and \
                    (tag not in chosen or sum(at) < sum(chosen[tag][0])):
                chosen[tag] = at, v
        return [v for _, v in chosen.values()]

    def known(self, held: tuple[str, ...], coef: np.ndarray,
              points: np.ndarray) -> np.ndarray:
        """The kept bounds that hold here at grid indices `points` (pJ, one group; NaN:
        none), carried to the coefficients `coef` (`_chosen`'s entries)."""
        out = np.full(len(points), np.nan)
        for kept_coef, at, bounds in self._chosen(held):
            rho = _scale(coef, kept_coef)
            if rho > 0:
                out = np.fmax(out, rho * _at(at, bounds, points))  # NaN: unknown there
        return out

    def raise_floor(self, held: tuple[str, ...], coef: np.ndarray, points: np.ndarray,
                    sub: np.ndarray, floor: np.ndarray) -> np.ndarray:
        """`floor` (pJ, one group, at grid indices points[sub]) raised to the `known` bounds
        there. The entries are looked up at all of `points` once per held arrays (the
        patterns of one batch of points share them), then taken at `sub`: the same values."""
        if self._looked is None or self._looked[0] is not points:
            self._looked = (points, {})  # holds `points`: identity is then a safe key
        found = self._looked[1]
        if held not in found:
            found[held] = [(kept_coef, _at(at, bounds, points))
                           for kept_coef, at, bounds in self._chosen(held)]
        out = floor
        for kept_coef, values in found[held]:
            rho = _scale(coef, kept_coef)
            if rho > 0:
                out = np.fmax(out, rho * values[sub])
        return out

    def note(self, held: tuple[str, ...], tag, coef: np.ndarray, points: np.ndarray,
             lower: np.ndarray) -> None:
        """Lower bounds `lower` (pJ, one group) at grid indices `points` under `coef`; tag:
        the held arrays' sources (or another name for the coefficients)."""
        if not held or not len(points):
            return
        key = (held, tag)
        if key not in self._noted or not np.array_equal(self._noted[key][0], coef):
            self._noted[key] = (coef, [], [])
        self._noted[key][1].append(points)
        self._noted[key][2].append(lower)

    def keep(self) -> None:
        """Store what was noted under this level's capacity, in the newest coefficients (an
        entry kept before at the same tag and capacity carried to them and merged)."""
        for (held, tag), (coef, points, lowers) in self._noted.items():
            key, sub = self._key(held), (tag, self._caps(held))
            at, bounds = np.concatenate(points), np.concatenate(lowers)
            old = self.kept.get(key, sub)
            if old is not None:
                at = np.concatenate([old[1], at])
                bounds = np.concatenate([_scale(coef, old[0]) * old[2], bounds])
            order = np.lexsort((-bounds, at))  # per index, the largest bound first
            at, bounds = at[order], bounds[order]
            first = np.ones(len(at), dtype=bool)
            first[1:] = at[1:] != at[:-1]
            self.kept.put(key, sub, (coef, at[first], bounds[first]))
        self._noted.clear()


__all__ = ["SLACK", "InnerMemory", "KeptBounds"]

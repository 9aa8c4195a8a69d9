"""The compiled kernels' callers (`search.kernel`): a level's placements as code tables
(`_codes`, `alone_tables`), their arguments at a `LevelBlocks`' points, and the three calls
`search` makes: each point's best fitting placement (`best_placements`), the innermost level's
least total over a batch (`least_total_at`) and its floors under a cap (`floors_under`). From
SPLIT points on a call is priced in two halves at once (lenet5's app edits on two levels, 2
cores: 264 ms median against 340 ms, the same answers). Proofs: docs/search.md, "Bounds:
exact skips"."""

from __future__ import annotations

import functools
import itertools
import threading

import numpy as np

from workbench.hierarchy.blocking import ARRAYS, DIMS
from workbench.hierarchy.levels import Hierarchy, capacity_banks
from workbench.hierarchy.search import tuning
from workbench.hierarchy.search.dominance import alone_prefixes, level_placements
from workbench.hierarchy.search.kernel import (
    HI,
    LO,
    ONE,
    STEP,
    best_fitting,
    floor_under,
    least_total,
)
from workbench.hierarchy.search.placements import (
    BIT,
    G0BIT,
    INNER,
    LANE,
    ROLL,
    buffer_spec,
    lane_dims,
    moved_code,
    step_roll,
)
from workbench.hierarchy.search.pricing import LevelBlocks


@functools.lru_cache(maxsize=64)
def _codes(held: tuple[str, ...], inner: bool, lanes: frozenset[str],
           relax: bool = False, shared: bool = True) -> tuple:
    """The distinct (array, code) pairs of `level_placements(held, inner, lanes)` as the
    kernel's tables (which tile per dimension, kernel windows, array kind) and per placement
    the index of each held array's code among them. relax: also `search.kernel.least_total`'s
    relaxations (one alone code per array when shared; each pair's placements with the third
    array's alone codes), per held array its alone codes, and the codes to price per stage."""
    index: dict[tuple[str, int], int] = {}

    def code_rows(arrays, slots) -> np.ndarray:
        table = level_placements(arrays, inner, lanes)
        out = np.full((len(table), len(held)), -1, dtype=np.int64)
        for i, (prefixes, _) in enumerate(table):
            for k, a, code in zip(slots, arrays, prefixes, strict=True):
                out[i, k] = index.setdefault((a, code), len(index))
        return out

    rows = code_rows(held, range(len(held)))
    lists = [[index.setdefault((a, c), len(index)) for c in alone_prefixes(a, inner, lanes)]
             for a in held] if relax else [[] for _ in held]
    alone = np.full((len(held), max(map(len, lists))), -1, dtype=np.int64)
    for k, found in enumerate(lists):
        alone[k, :len(found)] = found
    tables = [np.full((1, len(held)), -1, dtype=np.int64)] if relax and shared and \
        len(held) > 1 else []
    if relax and len(held) == 3:
        pairs = [code_rows((held[i], held[j]), (i, j))
                 for i, j in itertools.combinations(range(3), 2)]
        tables += sorted(pairs, key=len)
    stages, priced = [], set()
    for table in tables:  # the codes each relaxation needs, not priced before it
        need = {int(q) for q in table.ravel() if q >= 0} | \
            {int(q) for k in range(len(held)) if (table[:, k] < 0).any() for q in alone[k]
             if q >= 0}
        stages.append(sorted(need - priced))
        priced |= need
    stages.append(sorted(set(range(len(index))) - priced))
    codes = list(index)
    which = np.array([_which(moved_code(code)) + _held_which(a, code, lanes)
                      for a, code in codes], dtype=np.int8).reshape(-1, 2 * len(DIMS))
    kfull = np.array([_windows(code) for _, code in codes], dtype=np.int8).reshape(-1, 5)
    kind = np.array([ARRAYS.index(a) for a, _ in codes], dtype=np.int8)
    relaxed = np.concatenate(tables) if tables else np.zeros((0, len(held)), dtype=np.int64)
    return (tuple(a for a, _ in codes), rows, which, kfull, kind,
            (alone, relaxed, np.cumsum([0] + [len(t) for t in tables]),
             np.array([q for stage in stages for q in stage], dtype=np.int64),
             np.cumsum([0] + [len(st) for st in stages[:-1]])))


def _which(code: int) -> list[int]:
    """Per dimension, which tile a plain code's block has (LO, HI or ONE)."""
    return [(LO if code & G0BIT[d] else ONE) if code >= INNER else (HI if code & BIT[d] else LO)
            for d in DIMS]


def _held_which(array: str, code: int, lanes: frozenset[str]) -> list[int]:
    """Per dimension, which tile a code's buffer has: `_which` of its held loops, and STEP
    along an unrolled output loop it rolls along (`step_roll`) or a LANE code's lanes."""
    out = _which(buffer_spec(code)[0])
    for q in (step_roll(code, lanes), *lane_dims(array, code, lanes)):
        if q is not None:
            out[DIMS.index(q)] = STEP
    return out



def _windows(code: int) -> list[int]:
    """The kernel's table of a code's windows: moved along FX, FY (1: K, 0: 1), whether it
    rolls, and its buffer's along FX, FY (0: 1, 1: K, 2: min(S, K))."""
    moved, (held, sx, sy) = moved_code(code), buffer_spec(code)
    full = [moved < INNER or bool(moved & G0BIT[f]) for f in ("FX", "FY")]
    kept = [2 if stride else int(held < INNER or bool(held & G0BIT[f]))
            for f, stride in (("FX", sx), ("FY", sy))]
    return [int(full[0]), int(full[1]), int(bool(code & (ROLL | LANE))), *kept]


@functools.lru_cache(maxsize=64)
def alone_tables(array: str, inner: bool, lanes: frozenset[str]) -> tuple:
    """The compiled kernels' tables (which tile per dimension, kernel windows, array kind) of
    `array`'s alone codes (`alone_prefixes`), as `_codes` lays out a placement's."""
    codes = alone_prefixes(array, inner, lanes)
    which = np.array([_which(moved_code(c)) + _held_which(array, c, lanes) for c in codes],
                     dtype=np.int8).reshape(-1, 2 * len(DIMS))
    kfull = np.array([_windows(c) for c in codes], dtype=np.int8).reshape(-1, 5)
    return which, kfull, np.full(len(codes), ARRAYS.index(array), dtype=np.int8)


def _kernel_args(hierarchy: Hierarchy, level_idx: int, blocks: LevelBlocks,
                 held: tuple[str, ...], relax: bool = False) -> tuple:
    """`search.kernel`'s arguments for the level's placements holding `held` at the blocks'
    points (tiles, extents, outputs, code tables, rows, caps and banks), and the relaxations'
    tables (`_codes`)."""
    n = len(blocks.p["X"])
    level = hierarchy.levels[level_idx]
    bank, caps = capacity_banks(level, held)
    arrays, rows, which, kfull, kind, relaxations = _codes(
        held, blocks.gamma == 1, blocks.lanes, relax, len(set(bank)) < len(bank))
    lay, prec = blocks.layer, blocks.precision

    def rows_of(values: dict) -> np.ndarray:
        return np.stack([np.broadcast_to(np.asarray(values[d], dtype=float), (n,))
                         for d in DIMS])

    width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}
    points = (np.stack([rows_of(blocks.lo), rows_of(blocks.hi), rows_of(blocks.step)]),
              rows_of(blocks.p), np.broadcast_to(np.asarray(blocks.outputs, dtype=float), (n,)))
    table = (which, kfull, kind, np.array([blocks.coef[a] for a in arrays], dtype=float),
             np.array([width[a] for a in arrays], dtype=float),
             np.array([8 * width[a] for a in arrays], dtype=float),
             np.array([lay.Kx, lay.Ky, lay.Sx, lay.Sy, prec.outputs, prec.partial_sums],
                      dtype=float))
    fit = (rows, np.array(caps, dtype=float), np.array(bank, dtype=np.int64))
    return (points, table, fit), relaxations


def _halves(n: int) -> int:
    """Where a compiled call over n points is split (0: it is not; one processor: never)."""
    return n // 2 if n >= tuning.SPLIT and tuning.CPUS > 1 else 0


class _Half(threading.Thread):
    """fn(*args) in a thread of its own, started at once; `result()` waits for it (and raises
    what it raised). A thread per split call, nothing kept between calls: the compiled
    kernels release the GIL, and SPLIT points take far longer than a thread's start."""

    def __init__(self, fn, args: tuple) -> None:
        super().__init__(name="workbench-kernel", daemon=True)
        self._call = (fn, args)
        self._out: object = None
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        fn, args = self._call
        try:
            self._out = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller in `result`
            self._error = exc

    def result(self):
        self.join()
        if self._error is not None:
            raise self._error
        return self._out


def _other_half(fn, *args) -> _Half:
    """Run fn(*args) in a second thread (`_Half`: its `result()` joins it)."""
    return _Half(fn, args)


def _points_of(args: tuple, a: int, b: int) -> tuple:
    """`_kernel_args`' arguments at points a … b (tiles and extents copied contiguous, as
    the kernels were compiled for)."""
    (tiles, p, outputs), *rest = args
    return ((np.ascontiguousarray(tiles[:, :, a:b]), np.ascontiguousarray(p[:, a:b]),
             outputs[a:b]), *rest)


def best_placements(hierarchy: Hierarchy, level_idx: int, blocks: LevelBlocks,
                    held: tuple[str, ...]):
    """Per point, the least energy (pJ, one group) of a fitting placement of level
    `level_idx` holding `held`, and its index in `level_placements(held, inner, lanes)`
    (inner: the blocks are the innermost level's, lanes theirs; inf, −1: none fits; ties: the
    first), priced by the compiled `search.kernel.best_fitting` (the counts of `block`)."""
    if not held:
        n = len(blocks.p["X"])
        return np.zeros(n), np.zeros(n, dtype=np.int16)
    args = _kernel_args(hierarchy, level_idx, blocks, held)[0]
    h = _halves(len(blocks.p["X"]))
    if not h:
        return best_fitting(*args)
    later = _other_half(best_fitting, *_points_of(args, h, None))
    first = best_fitting(*_points_of(args, 0, h))
    return tuple(np.concatenate(pair) for pair in zip(first, later.result(), strict=True))


def least_total_at(hierarchy: Hierarchy, blocks: LevelBlocks, held: tuple[str, ...],
                   outside: np.ndarray, bound: np.ndarray, groups: int,
                   best: float) -> tuple[float, int, int, np.ndarray]:
    """The innermost level's first point of least total (outside + its best fitting
    placement) × groups below `best` (pJ): (total, point, placement index, lower), or (best,
    −1, −1, lower); `bound`: a lower bound on the level's energy per point; lower: a lower
    bound at least `bound` on it per point (pJ, one group; `search.kernel.least_total`)."""
    if not held:
        total = (outside + 0.0) * groups
        j = int(np.argmin(total)) if len(total) else -1
        lower = np.zeros(len(total))
        return (float(total[j]), j, 0, lower) if j >= 0 and total[j] < best else \
            (best, -1, -1, lower)
    args, relaxations = _kernel_args(hierarchy, len(hierarchy.levels) - 1, blocks, held,
                                     relax=True)
    lower = np.empty(len(bound))
    outside, bound = np.asarray(outside, dtype=float), np.asarray(bound, dtype=float)
    h = _halves(len(bound))
    if not h:
        total, j, i = least_total(*args, relaxations, outside, bound, float(groups),
                                  float(best), lower)
        return float(total), int(j), int(i), lower
    # each half from `best`: the second's least, when below the first's, is the least the
    # one call finds past the first half (its first point of least total; at a point, the
    # least placement below any best above it); a tie keeps the first half's, as one call
    later = _other_half(least_total, *_points_of(args, h, None), relaxations, outside[h:],
                        bound[h:], float(groups), float(best), lower[h:])
    total, j, i = least_total(*_points_of(args, 0, h), relaxations, outside[:h], bound[:h],
                              float(groups), float(best), lower[:h])
    total_b, j_b, i_b = later.result()
    if j_b >= 0 and total_b < total:
        total, j, i = total_b, h + j_b, i_b
    return float(total), int(j), int(i), lower


def floors_under(hierarchy: Hierarchy, blocks: LevelBlocks, held: tuple[str, ...],
                 cap: np.ndarray) -> np.ndarray:
    """Per point, a lower bound on the innermost level's least fitting energy holding `held`
    (pJ, one group; inf: nothing fits), exact where below cap (`search.kernel.floor_under`)."""
    if not held:
        return np.zeros(len(cap))
    args, relaxations = _kernel_args(hierarchy, len(hierarchy.levels) - 1, blocks, held,
                                     relax=True)
    cap = np.asarray(cap, dtype=float)
    h = _halves(len(cap))
    if not h:
        return floor_under(*args, relaxations, cap)
    later = _other_half(floor_under, *_points_of(args, h, None), relaxations, cap[h:])
    return np.concatenate([floor_under(*_points_of(args, 0, h), relaxations, cap[:h]),
                           later.result()])


__all__ = ["alone_tables", "best_placements", "floors_under",
           "least_total_at"]

"""Exact minimum-energy blocking of one layer on a given hierarchy, over the space S below
(seed 001 §3 blocking strings with seed 002's per-array buffering positions, one level each).

Space S (everything in it is priced; nothing else is searched). L on-chip levels, G = L + 1
loop groups; tiles: every divisor chain t_0 | … | t_{L−1} ≤ E per dimension, the outermost
group covering the layer with ⌈E/t_{L−1}⌉ full blocks (P = padded extent, t_L := P).
Role orders (`search_roles`): the levels' groups nest in an order ρ of the on-chip levels; the
level playing role r (1 = outermost) owns group γ = L−r+1 (the loops stepping over its blocks
t_{γ−1}), and every array's holders play roles in memory order (each fills from the next
memory level outwards holding it, its buffer inside that one's). Under the identity each level
plays its own role (seed 001's nesting); another order lets levels sharing no array nest the
other way, e.g. an SRAM's inputs and weights inside the loops around a register file's
partial sums (seed 001 §3.5 packs buffers that do not fit a level into the next one). Under an
order other than the identity the innermost role holds some array: otherwise groups 0 and 1
hold no buffer, and when the blocks do not pad (t_{L−1} | E) the blocking is, block for
block, one of the order playing that empty level outermost, with tiles (t_1, …, t_{L−1}, E)
(its datapath steps (P/t)·⌈t/u⌉ do not grow from t_0 to t_1, a multiple of it), searched
there. Below, "level" is the level playing a role under one order; S's optimum is the least
over the orders, the identity first (its best energy bounds the others'), and the merged
part's (below), searched last. Per role:
- holders (bypass by choice): per array, any subset of the on-chip levels able to hold it (a
  split level whose part for it is 0 cannot); each holder fills from the next holder outwards
  (DRAM when none), the datapath reads from the innermost one (`holder_patterns`);
- a loop order π_γ of X, Y, C, M, N for that group (group 0's order changes nothing: no
  position lies inside it);
- for every array A the level holds, a buffering position anywhere in group γ: after the
  prefix S_A of π_γ (S_A = ∅ is R's position, the end of group γ−1; all five loops: the end
  of group γ). A's block then
  has c_d = t_γ along the dimensions in S_A and t_{γ−1} along the others;
- the innermost level (γ = 1) may instead put A's buffer inside group 0: after a prefix m_A
  of an order π_0 of FX, FY, X, Y, C, M, N (one order for the level; m_A = ∅ is position −1,
  one element per MAC). Its block has c_d = t_0 along the dimensions in m_A and 1 along the
  others, and the kernel window k = K (FX, FY in m_A) or 1 (seed 001 §3: "Fw, Fh are not
  required to be the innermost loops"); m_A encloses the loops of the dimensions the datapath
  unrolls among A's operands (`step_bits`), so that the block holds a step's operands, or
  (LANE codes, `search_placements.lane_prefixes`) m_A ends in a loop carrying A's reuse
  (irrelevant to A, or, for I, rolling its window) and the step's loops it leaves out run
  directly after it, the buffer after them: it moves what m_A's buffer moves (the left-out
  loops are relevant to A and carry none of its reuse), and by eq. 2 in step time holds
  m_A's buffer with their lanes, min(u, t_0) each (I: not X (Y) left out with FX (FY) in
  m_A, which would carry the window);
- every level's inputs may also take eq. 2's buffer where their window rolls along the
  outermost loop q of their position (`search_placements.rolling`: q = X, Y of the level's
  group, or, at the innermost level, X, Y after their kernel loop, FX, FY after their output
  loop in group 0): the loops inside q (FX, FY: a stride's worth, min(S, K); along X, Y of
  group 0 that the datapath unrolls, a step's min(u, t_0) outputs: eq. 2 in step time,
  `search_placements.step_roll`), never more than eq. 2's buffer there when q runs more than
  once (every loop carrying reuse lies inside q), and never more than the footprint;
- a blocking fits when Σ_A buffer_A × width_A ≤ capacity (split: each within its part),
  buffer_A the footprint (eq. 1) but for those rolling inputs. Both bound eq. 2's buffers, so
  the result fits by `accesses.evaluate` too; not conversely (below).
Merged parts (`search_merged`, with bypass). Two on-chip levels: every blocking holding no
array at both levels, each level some array, with t_1 = t_0 (the register file's group runs
once), its buffers anywhere: one-level S of the two levels as one level, each array priced per
bit at its own level and fitting its own level's bytes (a bank per level, or its own banks
where split or banked), a search per assignment of the arrays to the levels, below the best
energy of the role orders; mapped back by `search_merged.unmerged`. One-level S holds every
blocking of one level fitting by `evaluate`'s rule whose buffers hold a datapath step, up to
equivalent ones (below), so the merged part holds every such two-level blocking. It lets both
levels keep buffers in one group: an SRAM holding inputs outside the register file's partial
sums and a weight inside them costs 1600 pJ on a tiny layer where the role orders' optimum is
1846 (`tests/test_hierarchy_incumbents.py`). On 61 tiny layers over two levels of a few
bytes the optimum is the least over every blocking in all 61 (seed 2: 61), where without the
merged part it was 1.1-15.4% above it in 6 (1.2-17.7% in 4)
(`benchmarks/bench_hierarchy_gaps.py`). Three or more on-chip levels: per pair of adjacent
levels k, k + 1 and assignment of the arrays to them using both, the blockings holding no
array at both, with level k + 1's group running once (t_{L−k} = t_{L−k−1}): S of the hierarchy
with the pair as one level (the same pricing and banks), searched whole below the best energy
found, its own merged parts included (so three levels may act as one, or two pairs), mapped
back by `unmerged` (tests/test_hierarchy_merged.py: a tiny layer at 634 pJ where the role
orders' optimum is 670). On 60 tiny layers over three levels of a few bytes, merged levels
are cheaper than the role orders alone in 3, 11 and 5 (seeds 1-3), by 0.3-15.9%
(`benchmarks/bench_hierarchy_gaps.py --levels 3`); on lenet5's conv layers at four
three-level hierarchies of 64 B-256 KB they change nothing.
S ⊇ R (all S_A = ∅, every level holding every array it can; `search_r`); `bypass=False`
searches only R's holders (faster), under the identity. Not in S (so not claimed optimal
against them):
- a level's buffers outside its role's group, some or all of them, so that two levels keep
  buffers in one group, where the blocking is not of a merged part: an array held at both
  levels, their inner level's group running more than once, or (three or more on-chip
  levels) the two levels not adjacent;
- the blockings that fit only by eq. 2's buffers (`evaluate`'s rule) at an outer level
  whose own group's loops inside a buffer carry none of its reuse (or run once): its
  outermost reuse-carrying loop then lies in an inner group, whose order is another level's
  choice, and the buffer streams that group's blocks (lemma 3's independence would not hold).
  Where that loop q lies in the level's own group (and at the innermost level, with a scalar
  datapath, anywhere), eq. 2 adds nothing else: a position whose outermost reuse-carrying
  loop q (running more than once) lies inside it moves and holds what the position just after
  q does (the loops between are relevant to the array and carry none of its reuse: they
  scale footprint and refills inversely), which is in S (W, O: q irrelevant to them, its
  buffer its footprint; I: rolling along q). With an unrolled datapath eq. 2 runs in step
  time (`blocking.buffer_size`: a step's lanes held together): the position just after q may
  leave out loops a step spans, and then eq. 2 at the position holds their lanes only, which
  is a LANE code's buffer (without them: weights with M unrolled and an X loop inside M held
  M's t_0, not u_M, 0.56% above on a 2-column layer of 4 maps, 3-wide kernel, M by 2, 12 B).
  On one level, counting DRAM bytes, S's optimum moves what seed 002's search moves on
  AlexNet's first layer at 1-64 KB (`benchmarks/bench_hierarchy_reach.py`; with footprints
  only, 2.6-11.8% more); on two
  levels, a 3-wide kernel's row on a 6 B SRAM costs 12.7% more with the SRAM's inputs held
  by their footprints (`tests/test_hierarchy_search.py`);
- the innermost role's buffers outside groups 0 and 1, and those inside group 0 that do not
  hold a datapath step's operands;
- under an order other than the identity, the padded blockings whose innermost role holds
  nothing.
With one on-chip level S therefore holds every blocking fitting by `evaluate`'s own rule (eq.
2, in step time on an unrolled datapath) whose buffers hold a datapath step, up to equivalent
ones (tests/test_hierarchy_search.py: brute force over every position anywhere). With nothing
held anywhere a blocking always fits, so S is never empty. Objective: `accesses.energy_pj`
summed, MAC energy Kx·Ky·ΠP × mac_energy_pj included; the datapath's operand fetches are
`datapath.fetches` over the inner block t_0.

Counts at a position in a group ≥ 1 (the kernel loops, in group 0, are inside): for a block c,
  F_W = c_M·c_C·Kx·Ky,  moved_W = Kx·Ky·P_M·P_C·(P_X/c_X)(P_Y/c_Y)(P_N/c_N)
  F_O = c_N·c_M·c_Y·c_X, moved_O = P_N·P_M·P_Y·P_X·(P_C/c_C)
  F_I = c_N·c_C·W_y(c_Y)·W_x(c_X), moved_I = P_N·P_C·(P_M/c_M)·W_y(c_Y)(P_Y/c_Y)·W_x(c_X)(P_X/c_X)
with W(c) = (c−1)·S + K (c·K if S ≥ K): moved = footprint × refills, refills = Π_d P_d/c_d.
Every moved count is non-increasing in every c_d (W(c)/c never grows), every footprint
non-decreasing. Inside group 0 (innermost level): footprints as above with Kx, Ky replaced by
the windows kx, ky ∈ {1, K} and W(c, k) = (c−1)·S + k (c·k if S ≥ k), refills
(Kx/kx)(Ky/ky)·Π_d P_d/c_d, c_d ∈ {1, t_0}. Moving a position outward past a loop never raises
moved: the footprint grows at most by the loop's trip count (W(c, k) ≤ c·W(1, k) and
W(c, K) ≤ K·W(c, 1) since S ≥ 1) while the refills fall by it.

Lemma 1 (positions just before a relevant loop). A loop over a dimension A's index does not
use (I: M; W: X, Y, N; O: C) changes neither A's footprint nor anything else when A's position
is moved outward past it, and divides A's refills by its trip count (≥ 1). So a position
directly followed by such a loop is never better than the one after it: WLOG S_A is a prefix
of π_γ directly followed by a loop relevant to A, or the whole group (`canonical_prefixes`).
Counts depend on π_γ only through the prefixes each array gets, so a level's placements are
the distinct tuples (S_A) over all 120 orders (a trip-1 loop changes nothing anywhere). In
group 0 the loops irrelevant to an array are I: M; W: X, Y, N; O: FX, FY, C: the innermost
level's group-0 positions are the prefixes of π_0 directly followed by any other loop
(`search_space.inner_prefixes`), over all 5,040 orders.
Lemma 2 (dominated placements). Per array, each dimension of S_A either only grows the
footprint (W: M, C; O: X, Y, M, N; I: C, N), only shrinks refills (W: X, Y, N; O: C; I: M) or
both (I: X, Y, the halo). A code's block moves with the loops M inside it at t_γ and holds
those of H (H = M, but H = M ∖ {q} rolling along q). A placement whose arrays each have, of
another's, every M bit among the loops its moved falls with (refill, both) and no H bit more
among those its footprint grows with (footprint, both) moves and holds no more for any tiles:
the other is dropped (`outer_placements`: 101 of 3,749 tuples remain for I, W, O; without
rolling codes this keeps the same "both" part, 96 of 3,326).
Lemma 2' (the innermost level). Grade each loop of GROUP0 per array by how far its buffer
reaches along it (`grades`: 0 outside, 1 inside group 0 (c = t_0, kernel K), 2 group 1's loop
too (c = t_1); 1 ≤ t_0 ≤ t_1). Footprint-only loops (I: C, N; W: FX, FY, M, C; O: X, Y, M, N)
raise the footprint with their grade and leave moved unchanged, refill-only loops (the
irrelevant ones above) lower moved and leave the footprint, I's (X, FX) and (Y, FY) pairs move
both. Footprint-only loops are graded by the buffer's loops, refill-only ones by the moved
block's. Each I pair has two features: how much it moves per output column (row), K·P in the
states (c, k) = (1, 1), (t_0, 1), (1, K) (W(c, 1)·K/c = K = W(1, K)·K/K), then W(t_0, K)/t_0
(both inside group 0), then W(t_1, K)/t_1 (group 1's too), a chain; and how much its buffer
holds: 1, t_0, K, t_0·min(S, K) (rolling along FX: a stride's worth), W(min(u, t_0), K)
(rolling along an X of u > 1 lanes: a step's outputs), W(t_0, K), W(t_1, K), with 1 ≤ t_0 ≤
t_0·min(S, K) ≤ W(t_0, K) ≤ W(t_1, K) and 1 ≤ K ≤ W(min(u, t_0), K) ≤ W(t_0, K) for all
t_0 ≤ t_1, K, S, u ≥ 1 (`search_dominance._features`). A LANE code's left-out loops are
graded between outside and inside group 0 (a step's lanes: 1 ≤ min(u, t_0) ≤ t_0; an output
loop's with no kernel loop: min(u, t_0) columns, at most t_0 and W(min(u, t_0), K)). A tuple
with, per held array, every feature at most the other's is never worse: dropped
(`inner_placements`: 782 remain for I, W, O on a scalar datapath, 646 of them with the inputs'
window rolling, each array inside group 0 or group 1; 831 with C and M unrolled, 740 of them
with LANE codes; exact bit-set subset tests).
Lemma 3 (levels are independent given the tiles and the holders). Under one holder pattern
the levels exchanging data are fixed; level k's energy and capacity involve only its own placement
and (t_{γ−1}, t_γ, P): each level takes its best fitting placement independently, exactly.
Outer levels (γ ≥ 2) are priced once per distinct (t_{γ−1}, t_γ, P) vector (a table per X
class, looked up per tile combination).
Lemma 4 (tile chains, as in `search_r`). Every count above is a product of non-negative
factors each non-decreasing in one component of v(c) = (t_0 … t_{L−1}, P/t_0 … P/t_{L−1}, P)
of one dimension (c_d ∈ {t_{γ−1}, t_γ}, P_d/c_d likewise; datapath steps (P/t_0)·⌈t_0/u⌉);
placements do not depend on the tiles, so replacing a chain by one with a componentwise
smaller vector keeps every placement valid, raises no energy and no footprint: only
`nondominated_chains` are enumerated, all of their combinations.
The optimum is the least over holder patterns of each pattern's optimum (outer levels' tables
are shared by the patterns giving a level the same arrays and sources).
Lemma 5 (mirror). When the layer and the datapath are alike along X and Y (Ox = Oy, Kx = Ky,
Sx = Sy, as many lanes along both), renaming X ↔ Y and FX ↔ FY in a blocking of S (tiles,
every group's order; positions stay) gives a blocking of S with the same footprints, counts
and energy: every count above is symmetric under the swap. X and Y then have the same
chains, so only the points whose X chain index is at most their Y chain index are searched
(`mirrored`).
Incumbents (exact start). A blocking of S that fits (`search_bounds.incumbent`: in S by
`in_s` or of its merged part by `search_merged.in_merged`, footprints within every level)
costs at least S's optimum, so its energy may be the best energy found before anything is
priced; every skip below then drops only blockings not below it, and it is the answer when
nothing is. Likewise a search part whose every pattern's floor reaches the best energy found
is not entered.
Bounds (exact skips). Every placement of an outer level has blocks containing R's (c ≥
t_{γ−1}), and the innermost level's smallest blocks are one element each (position −1), so
where those blocks of the arrays a level holds overflow it, no placement fits: those
combinations are skipped for that pattern. A pattern whose floor (`pattern_floor`: whatever the
tiles, every holder receives each element at least once, outputs leave each holder at least
once, the datapath steps at least ⌈E/u⌉ times per dimension) reaches the best energy found is
skipped; R's pattern is searched first, so that best is low. Per tile point, MACs +
`relaxed_floor` bound every fitting blocking there under any live pattern (per array, the least
over its holder chains of its transfers with its block fitting each holder alone, plus the
datapath's fetches: the capacity a level shares and the one order of a group dropped); points
where that reaches the best energy found are dropped before anything else is priced there (with
no best yet, or a weak one from an incumbent: more than WEAK × SEED points below it, the SEED
points of lowest floor are priced first to get a lower one); a slice whose least
floor for the other patterns, taken while R's pattern is priced, reaches the best energy found
is not visited again. The floor is a sum over arrays of a least over chains, so one pattern's
own sum (its chains' terms) bounds that pattern's blockings: a pattern is priced only where
that sum is below the best energy found. The points where any live pattern's smallest blocks fit are
found from the patterns holding least (a pattern holding, at every level, a subset of another's
arrays fits wherever that one does). The innermost level is priced last, combinations in rising
order of a lower bound (MAC + datapath + outer levels + the innermost level with each held
array's least-moving block that fits the level alone, `alone_floor`), lowest first a batch at
a time; once that bound reaches the best energy found, the rest cannot beat it. In a batch the
compiled `search_kernel.least_total` also skips a point whose total with the least sum of one
alone code per held array (`alone_prefixes`; every code's footprint and energy are at least
one of them) fitting a shared level together reaches it, and a placement whose total does.
Lifted bounds (searches of many slices; on one slice they cost more than they prune, and
skipping a bound is exact): where patterns share the innermost level's held arrays, its least
energy under the least of their coefficients, priced once, bounds each pattern's there
(`lifted`). Kept bounds (exact skips across searches). On a layer of one slice, the lower
bounds the kernel leaves on the innermost level's energy per point are kept;
another search of the layer (the app's next edit) raises that level's floor to them, carried
to its own coefficients and taken only from capacities at least its own (`search_memory`).
Shares (exact). A layer of many slices may be searched by n processes, each taking every n-th
slice from its own start (`share`) below its own start energy: the optimum lies in some share,
whose search finds it unless its start is no higher, so the least of the n answers is the
optimum's energy.
Shared work (no bound changes). A level's alone floors are priced once per class of its
(t_{γ−1}, t_γ, P) over all chains, where those classes are few enough, not once per slice (or
per point of a one-slice search), and kept for other searches keeping the level's size in the
same role (`search_alone`); so are an outer level's best placements per class (lemma 3), for
searches with the same level, arrays held and pJ per bit into them (`search_levels._KEPT`).
Class floors (exact skips; two or more on-chip levels, the roles' alone floors tabled). Every
term of `relaxed_floor` is a function of one role's class (t_{γ−1}, t_γ, P) of each dimension's
chain (MAC energy of P, the datapath's fetches of (t_0, P)). Classes: with three or more levels
the innermost role's (t_0, t_1, P), with two the outer role's (t_1, P). Per class combination
c, each term at most its least over c's chains: an outer role's at its least over the chains
with c's (t_1, P) (a superset of c's chains; the least over a product of per-dimension sets,
taken one axis at a time); with two levels, the innermost role's alone floor bounded over every
t_0 | t_1 by each alone code's energy with its t_0 extents at t_1 (moved never grows with a
block's extent) where its footprint with them at 1 fits, and the fetches at t_0 = t_1 (along
each dimension ⌈(t_1/t)·t/u⌉ ≤ (t_1/t)·⌈t/u⌉: the fewest steps). Summed as `relaxed_floor`
sums (float sums and products of non-negative terms are monotone, so the bound is at most the
floor of each point of c, rounding included). Class combinations are priced lowest bound first
(`search_classes`); once the next one's bound reaches the best energy found, every point left
has a floor that does, so none can beat it. With two levels each batch is bounded again per
pattern with the outer role's own best fitting placement in place of its alone floors (exact
at the class: its blocks are c ∈ {t_1, P}; one array held: its alone floor), summed in
`_price`'s order: a class, and a pattern in the batch, are priced only where such a bound is
below the best energy found (`ClassFloors.outer_floor`). With no best energy, or an
incumbent's leaving more than WEAK × SEED points below it, R's pattern is priced first at the
classes of lowest bound holding about SEED points. A sliced layer's shares are then class
combinations k, k + n, … (flat index), a partition as slices are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from workbench.hierarchy import interrupt
from workbench.hierarchy.accesses import ElementBytes, PrecisionLike
from workbench.hierarchy.blocking import ARRAYS, DIMS, Blocking, extents
from workbench.hierarchy.levels import Hierarchy, SizeEnergy
from workbench.hierarchy.search_alone import AloneTables
from workbench.hierarchy.search_bounds import incumbent, pattern_floor
from workbench.hierarchy.search_class_floors import ClassFloors
from workbench.hierarchy.search_classes import search_classes
from workbench.hierarchy.search_grid import chain_classes, mirrored
from workbench.hierarchy.search_levels import _blocking
from workbench.hierarchy.search_memory import InnerMemory
from workbench.hierarchy.search_merged import merged_levels, new_patterns, unmerged
from workbench.hierarchy.search_points import _points
from workbench.hierarchy.search_r import (
    CHUNK,
    NoFitError,
    SearchResult,
    _pj_per_bit,
    gen_chains,
    nondominated_chains,
    search_r,
)
from workbench.hierarchy.search_roles import (
    Roles,
    in_roles,
    role_orders,
    role_patterns,
    to_memory,
)
from workbench.hierarchy.search_space import holder_patterns, unrolled_dims
from workbench.layers.spec import ConvLayer, as_grouped
from workbench.memo import ByteLRU

_EXTENT = {"X": "Ex", "Y": "Ey", "C": "C", "M": "M", "N": "N"}
SMALL = 1 << 21   # tile combinations up to which a layer is priced in one slice
# per (layer, levels, holder, its capacity for the array, array, mirror, widths, lanes): unit
# alone floors of a one-slice search (`chain_terms`), reused when another hierarchy keeps the
# level's capacity (an edit of one level in the app)
_ALONE = ByteLRU(128 * 2**20, lambda a: np.asarray(a).nbytes)


def search(layer: ConvLayer, hierarchy: Hierarchy, precision: PrecisionLike | None = None,
           size_energy: SizeEnergy | None = None, bypass: bool = True,
           incumbents: Sequence[Blocking] = (), share: tuple[int, int] = (0, 1),
           merged: bool = True) -> SearchResult | None:
    """The minimum-energy blocking of the layer in S (see the module docstring); energy in pJ
    for the whole layer (ties: any one optimum). bypass=False: only R's holders (every level
    holds every array it can; NoFitError when no such blocking fits). `incumbents`: blockings
    to start from (e.g. the layer's optima on other hierarchies): the least-energy one in S
    that fits (`search_bounds.incumbent`) is an energy the optimum is at most, so only
    blockings below it are priced; it is the answer when none is. `share` (k, n): only the
    slices (or class combinations: `search_classes`) k, k + n, k + 2n, ... of a `sliced`
    layer (n processes searching one layer: the least of their answers is the optimum, each
    being its share's least or the start); None when the share has no blocking and there is
    no start. `merged` False: the role orders only, not the merged parts (a smaller space, for
    measuring what they add)."""
    layer = as_grouped(layer)  # a connection table's groups, if it has them
    precision = ElementBytes() if precision is None else precision
    start = incumbent(layer, hierarchy, precision, size_energy, bypass, incumbents)
    found = _least(layer, hierarchy, precision, size_energy, bypass,
                   math.inf if start is None else start[0], share, (0, 1), merged)
    interrupt.progress(1.0)
    on_chip = len(hierarchy.levels) - 1
    chains = {d: len(nondominated_chains(extents(layer)[_EXTENT[d]], on_chip)) for d in DIMS}
    combos = math.prod(chains.values())
    if found is None and start is not None:  # nothing below the incumbent: it is optimal
        return SearchResult(start[1], start[0], chains, combos)
    if found is None and share[1] > 1:
        return None
    if found is None:
        raise NoFitError(f"layer {layer.name!r}: no blocking fits hierarchy "
                         f"{hierarchy.name!r} (its smallest blocks overflow a level)")
    return SearchResult(found[1], found[0], chains, combos)


def _least(layer: ConvLayer, hierarchy, precision: PrecisionLike,
           size_energy: SizeEnergy | None, bypass: bool, best: float, share: tuple[int, int],
           span: tuple[int, int], merged: bool = True) -> tuple[float, Blocking] | None:
    """S's least blocking of the hierarchy (a `RoleView` when merged levels make it one) below
    `best` (pJ): (energy, blocking), or None. The role orders (the identity first, R's
    holders: `bypass` False searches only those), then, with `bypass` and `merged`, the merged
    parts (`search_merged`: with two on-chip levels one-level searches of their new patterns,
    with more the whole search of each merged hierarchy). `span` (i, n): the progress reported
    is the i-th of n equal parts of the whole (a merged part's search inside another's)."""
    on_chip = len(hierarchy.levels) - 1
    extent = {d: extents(layer)[_EXTENT[d]] for d in DIMS}
    per_dim = {d: nondominated_chains(extent[d], on_chip) for d in DIMS}
    orders = list(role_orders(hierarchy, bypass))
    parts = merged_levels(hierarchy) if bypass and merged else []
    stages = len(orders) + len(parts)
    best_at = None

    def stage(r: int) -> tuple[int, int]:
        return span[0] * stages + r, span[1] * stages

    shared: dict = {}  # the class floors' role-free part (`search_classes`), built once
    for r, roles in enumerate(orders):  # the identity first: R's holders
        seen = in_roles(hierarchy, roles)
        found = _search_roles(layer, seen, roles, precision, size_energy, bypass, per_dim,
                              extent, best, share, stage(r), shared)
        if found is not None:
            best, (rows_at, chosen, pattern) = found
            tiles = [{d: int(per_dim[d][rows_at[d]][g]) for d in DIMS} for g in range(on_chip)]
            best_at = to_memory(_blocking(seen, tiles, chosen, pattern), roles)
    one = {d: nondominated_chains(extent[d], 1) for d in DIMS}
    done: set = set()  # the merged patterns searched (each under one assignment)
    for r, (k, hosts, virtual) in enumerate(parts, len(orders)):  # levels as one
        if on_chip == 2:
            found = _search_roles(layer, virtual, (1,), precision, size_energy, True, one,
                                  extent, best, share, stage(r), {},
                                  new_patterns(virtual, hosts, done))
            if found is not None:
                best, (rows_at, chosen, pattern) = found
                tiles = [{d: int(one[d][rows_at[d]][0]) for d in DIMS}]
                best_at = unmerged(_blocking(virtual, tiles, chosen, pattern), k, hosts)
        elif (found := _least(layer, virtual, precision, size_energy, True, best, share,
                              stage(r))) is not None:
            best, best_at = found[0], unmerged(found[1], k, hosts)
    return None if best_at is None else (best, best_at)


def sliced(layer: ConvLayer, hierarchy: Hierarchy) -> bool:
    """Whether the layer is searched in many slices on the hierarchy (a `share` of it is then
    a share of the work; else share (0, n) is all of it and the others nothing)."""
    on_chip = len(hierarchy.levels) - 1
    extent = extents(layer)
    return math.prod(len(nondominated_chains(extent[_EXTENT[d]], on_chip))
                     for d in DIMS) > SMALL


def _search_roles(layer: ConvLayer, hierarchy, roles: Roles, precision: PrecisionLike,
                  size_energy: SizeEnergy | None, bypass: bool, per_dim: dict, extent: dict,
                  best: float, share: tuple[int, int], stage: tuple[int, int],
                  shared: dict, patterns: list | None = None):
    """S's part under one role order (`hierarchy`: seen under it): (energy pJ, where) of its
    least blocking below `best`, or None. `stage`: this role order's index and their count
    (the progress reported at each slice: role orders, then passes, then slices done);
    `shared`: what the role orders of one search share (the class floors' role-free part);
    `patterns`: the holder patterns to search (default: the role order's)."""
    on_chip = len(hierarchy.levels) - 1
    classes = {d: {g: chain_classes(per_dim[d], extent[d], g) for g in range(2, on_chip + 1)}
               for d in DIMS}  # role L−γ+1's view of each chain
    pj_bit = _pj_per_bit(hierarchy, size_energy)
    if patterns is None:
        patterns = role_patterns(hierarchy, roles) if bypass else \
            holder_patterns(hierarchy)[:1]
    floors = {p: pattern_floor(layer, hierarchy, pj_bit, precision, p) * layer.groups
              for p in patterns}
    if all(f >= best for f in floors.values()):
        return None  # no pattern can beat the best energy found
    mirror = mirrored(layer, hierarchy)
    tables: dict[tuple, tuple] = {}  # outer levels' best placements (`_level_table`)
    # alone floors per class of chains: shared by the slices, or by one slice's points
    alone_tables = AloneTables(layer, hierarchy, per_dim, extent, precision)
    small = math.prod(len(c) for c in per_dim.values()) <= SMALL
    if ClassFloors.applies(alone_tables):  # classes lowest bound first
        if "floors" not in shared and any(f < best for f in floors.values()):
            shared["floors"] = ClassFloors(layer, hierarchy, per_dim, extent, precision)
        if "floors" not in shared:
            return None
        if small and share[0]:  # one slice: all of it in share 0, as over slices
            return None
        memory = InnerMemory(layer, hierarchy, tuple(len(per_dim[d]) for d in DIMS),
                             precision) if small else None
        found = search_classes(layer, hierarchy, per_dim, extent, classes, tables, pj_bit,
                               precision, floors, best, shared["floors"], alone_tables, mirror,
                               (0, 1) if small else share, stage, memory)
        if memory is not None:
            memory.keep()
        return found
    per_y = max(1, CHUNK // 4 // max(1, math.prod(len(per_dim[d]) for d in ("C", "M", "N"))))
    n_x = len(per_dim["X"])
    # a small layer is one slice, a large one an X chain and a slice of Y chains at a time
    # lemma 5: with X and Y alike only Y chains from the X chain's index on are searched
    pairs = np.triu_indices(n_x) if small and mirror else None  # (X, Y) index pairs, X ≤ Y
    slices = [(slice(0, n_x), slice(0, len(per_dim["Y"])))] if small else \
        [(slice(ox, ox + 1), slice(max(y0, ox) if mirror else y0, y0 + per_y))
         for ox in range(n_x) for y0 in range(0, len(per_dim["Y"]), per_y)
         if not mirror or y0 + per_y > ox]
    slices = slices[share[0]::share[1]]
    best_at = None
    alone: dict[tuple, np.ndarray] = {}  # relaxed_floor's terms when one slice
    kept = {(a, k): (layer, on_chip, k, hierarchy.levels[k].bytes_for(a), a, pairs is not None,
                     (precision.inputs, precision.weights, precision.outputs,
                      precision.partial_sums), unrolled_dims(hierarchy.datapath))
            for a in ARRAYS for k in range(1, on_chip + 1)}
    memory = None
    if len(slices) == 1:  # unit alone floors: the role's capacity and lanes, not its energy
        alone.update({key: v for key, memo in kept.items()
                      if (v := _ALONE.get(memo)) is not None})
        memory = InnerMemory(layer, hierarchy, tuple(len(per_dim[d]) for d in DIMS),
                             precision)
    # R's holders first (every level holds every array it can, as S did): its optimum is
    # usually close, so the other patterns are then priced against a low best energy
    # (a slice whose least floor for the other patterns, found in the first pass, reaches the
    # best energy found is skipped in the second)
    slice_floor = dict.fromkeys(range(len(slices)), -math.inf)
    for step, (batch, later) in enumerate((([patterns[0]], patterns[1:]),
                                           (patterns[1:], []))):
        for i, (xs, ys) in enumerate(slices):
            interrupt.progress((stage[0] + (step + i / len(slices)) / 2) / stage[1])
            # patterns whose floor reaches the best energy found cannot beat it
            live = [p for p in batch if floors[p] < best]
            if not live:
                break
            if slice_floor[i] >= best:
                continue
            interrupt.check()  # a safe point: nothing half-stored (`interrupt`)
            found, slice_floor[i] = _points(
                layer, hierarchy, per_dim, extent, classes, tables, pj_bit, precision, live,
                xs, ys, best, alone if len(slices) == 1 else {},
                [p for p in later if floors[p] < best], pairs, memory, alone_tables)
            if found is not None:
                best, best_at = found
    if memory is not None:
        memory.keep()
    for key, memo in kept.items():
        if key in alone:
            _ALONE.put(memo, alone[key])
    return None if best_at is None else (best, best_at)


__all__ = ["NoFitError", "SearchResult", "gen_chains", "nondominated_chains", "search",
           "search_r", "sliced"]

"""The unrolled datapath (workbench.hierarchy.datapath) in the N-level model: the datapath's
moved, partial reads, final writes, per-step operands and steps equal the literal executor's
(steps = iterations grouped by kernel position, outer blocks and ⌊index within t0 / lanes⌋),
a tiny layer worked out by hand, and a scalar datapath leaves every count unchanged."""

from __future__ import annotations

import math

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hierarchy_model import blocking_case

from workbench.errors import WorkbenchError
from workbench.hierarchy import (
    ARRAYS,
    DIMS,
    GROUP0,
    Blocking,
    ElementBytes,
    Hierarchy,
    Level,
    SplitCapacity,
    evaluate,
    executor,
    transfers,
)
from workbench.hierarchy.accesses import iterations
from workbench.hierarchy.blocking import trip_counts
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.search import search
from workbench.hierarchy.search.context import NoFitError
from workbench.layers import ConvLayer

ONE = ElementBytes(1, 1, 1, 1)


@st.composite
def small_layer(draw: st.DrawFn) -> ConvLayer:
    k = draw(st.integers(1, 3))
    groups = draw(st.sampled_from([1, 1, 1, 2]))
    return ConvLayer(name="d", Ox=draw(st.integers(1, 5)), Oy=draw(st.integers(1, 4)),
                     Oc=groups * draw(st.integers(1, 4)), On=draw(st.integers(1, 2)), Kx=k,
                     Ky=draw(st.integers(1, 3)), Kc=draw(st.integers(1, 4)),
                     Sx=draw(st.integers(1, 2)), Sy=draw(st.integers(1, 2)),
                     Px=draw(st.integers(0, (k - 1) // 2)), Py=0, groups=groups)


@st.composite
def datapath_case(draw: st.DrawFn, on_chip: int):
    """`blocking_case` (1–3 loop groups, grouped layers too) with a random unrolling: 1–5
    lanes on a random subset of the dimensions (so lanes may not divide t0, or exceed it)."""
    layer, blocking = draw(blocking_case(on_chip, layers=small_layer(), max_groups=3))
    unroll = {d: draw(st.integers(1, 5)) for d in draw(st.sets(st.sampled_from(DIMS)))}
    return layer, blocking, Datapath(unroll)


def _check(layer: ConvLayer, blocking: Blocking, datapath: Datapath) -> None:
    ran = executor.execute(layer, blocking, datapath)
    model = transfers(layer, blocking, datapath=datapath)
    assert {(t.array, t.level) for t in model} == set(ran)
    datapath_level = blocking.on_chip_levels + 1
    for t in model:
        got = ran[(t.array, t.level)]
        where = f"{t.array} at {t.level} ({t.position}), {datapath.unroll}: " \
            f"{blocking.describe()}"
        assert (t.moved, t.partial_reads, t.final_writes, t.distinct) == \
            (got["moved"], got["partial_reads"], got["final_writes"], got["distinct"]), where
        if t.level == datapath_level:
            assert t.refills == got["steps"], where          # refills of the datapath: steps
            assert t.footprint == t.buffer == got["live"], where  # a full step's operands
            assert t.macs == math.prod(trip_counts(layer, blocking)) * layer.groups
        else:  # eq. 2 in step time suffices; without sliding windows it is the live data
            assert t.buffer >= got["live"], where
            if t.array != "I" and _steps_held(layer, blocking, datapath):
                assert t.buffer == got["live"], where


def _steps_held(layer: ConvLayer, blocking: Blocking, datapath: Datapath) -> bool:
    """Does each array's innermost holder (the one the datapath reads) enclose every group-0
    loop of trip count > 1 over a dimension the datapath unrolls among the array's step
    operands (I: N, C, Y, X; W: M, C; O: N, M, Y, X)?"""
    operands = {"I": "NCYX", "W": "MC", "O": "NMYX"}
    n = trip_counts(layer, blocking)
    for array, positions in zip(ARRAYS, blocking.buffers, strict=True):
        held = [p for p in positions if p is not None]
        if not held:
            continue
        inside = {name for name, _ in blocking.loops[:held[-1] + 1]}
        for i, (name, group) in enumerate(blocking.loops):
            if group == 0 and n[i] > 1 and name in operands[array] and \
                    datapath.lanes(name) > 1 and name not in inside:
                return False
    return True


@settings(max_examples=examples(150))
@given(case=datapath_case(on_chip=2))
def test_evaluate_refuses_exactly_the_buffers_short_of_a_step(case) -> None:
    """`evaluate` prices a blocking whose buffers hold a datapath step each, and refuses one
    whose buffer inside group 0 leaves out a loop such a step spans, naming it."""
    layer, blocking, datapath = case
    hier = Hierarchy((Level("DRAM", None, 16, 100.0), Level("L1", 1 << 20, 16, 2.0),
                      Level("L2", 1 << 16, 16, 1.0)), datapath=datapath)
    if _steps_held(layer, blocking, datapath):
        evaluate(layer, blocking, hier)
    else:
        with pytest.raises(WorkbenchError, match=r"buffer of [IWO] holds less than one "
                                                 r"datapath step: group 0's [XYCMN] loop"):
            evaluate(layer, blocking, hier)


@settings(max_examples=examples(120))
@given(case=datapath_case(on_chip=1))
def test_datapath_one_level_model_equals_executor(case) -> None:
    _check(*case)


@settings(max_examples=examples(120))
@given(case=datapath_case(on_chip=2))
def test_datapath_two_levels_model_equals_executor(case) -> None:
    _check(*case)


@settings(max_examples=examples(120))
@given(case=datapath_case(on_chip=3))
def test_datapath_three_levels_model_equals_executor(case) -> None:
    _check(*case)


@settings(max_examples=examples(60))
@given(case=datapath_case(on_chip=2))
def test_scalar_datapath_changes_nothing(case) -> None:
    """No datapath, an empty unrolling and one lane everywhere give the same transfers, and
    the executor's scalar steps are the iterations."""
    layer, blocking, _ = case
    plain = transfers(layer, blocking)
    for scalar in (Datapath(), Datapath({d: 1 for d in DIMS}, clock_mhz=500)):
        assert transfers(layer, blocking, datapath=scalar) == plain
    ran = executor.execute(layer, blocking)
    last = blocking.on_chip_levels + 1
    for array in ARRAYS:  # one step per iteration, one operand of each array per step
        assert ran[(array, last)]["steps"] == ran[(array, last)]["moved"] == iterations(plain)


def _tiny() -> tuple[ConvLayer, Blocking]:
    """A 1×1 layer, 3 output columns, 2 input maps, 2 output maps, held whole in one on-chip
    level (no tiling: t0 = the layer)."""
    layer = ConvLayer(name="tiny", Ox=3, Oy=1, Oc=2, Kc=2)
    return layer, Blocking.of([GROUP0], [], {a: [6] for a in ARRAYS})


def test_tiny_layer_by_hand() -> None:
    """Unroll X by 2 (3 columns: a block of 2 and a block of 1, one lane idle) and C by 2.
    Steps: one per output map and X block, 2 × 2 = 4. Each step reads its (X, C) inputs, 4
    or 2, for each of 2 maps: (4 + 2)·2 = 12; its map's 2 weights: 4·2 = 8; and writes its
    X lanes' outputs once, C reduced by the adder tree: (2 + 1)·2 = 6, all final (no partial
    sum is read back). The scalar MAC instead fetches 12 of each, 6 partial reads."""
    layer, blocking = _tiny()
    dp = Datapath({"X": 2, "C": 2})
    expect = {"I": (12, 0, 0), "W": (8, 0, 0), "O": (6, 0, 6)}
    for source in (transfers(layer, blocking, datapath=dp), executor.execute(layer, blocking, dp)):
        got = {t.array: (t.moved, t.partial_reads, t.final_writes) for t in source
               if t.level == 2} if isinstance(source, tuple) else \
            {a: (source[(a, 2)]["moved"], source[(a, 2)]["partial_reads"],
                 source[(a, 2)]["final_writes"]) for a in ARRAYS}
        assert got == expect
    model = {t.array: t for t in transfers(layer, blocking, datapath=dp) if t.level == 2}
    assert {a: model[a].refills for a in ARRAYS} == dict.fromkeys(ARRAYS, 4)
    assert {a: model[a].footprint for a in ARRAYS} == {"I": 4, "W": 2, "O": 2}
    scalar = {t.array: (t.moved, t.partial_reads, t.final_writes) for t in
              transfers(layer, blocking) if t.level == 2}
    assert scalar == {"I": (12, 0, 0), "W": (12, 0, 0), "O": (12, 6, 6)}


def test_tiny_layer_accesses_and_energy_by_hand() -> None:
    """The same layer on DRAM + one level at 1 pJ per 8-bit access, 0.5 pJ per MAC. The level
    is written 6 inputs, 4 weights (from DRAM) and 6 final outputs (from the datapath), and
    reads 12 inputs and 8 weights for the datapath and 6 outputs for DRAM: 42 pJ. MAC energy
    stays 12 MACs × 0.5 = 6 pJ: unrolling changes operand fetches, not MACs."""
    layer, blocking = _tiny()
    dram, local = Level("DRAM", None, 8, 10.0), Level("L1", 1024, 8, 1.0)
    unrolled = Hierarchy((dram, local), mac_energy_pj=0.5, datapath=Datapath({"X": 2, "C": 2}))
    res = evaluate(layer, blocking, unrolled, ONE)
    assert (res.accesses[1].writes, res.accesses[1].reads) == ((6, 4, 0, 6), (12, 8, 0, 6))
    assert res.energy_pj == {"DRAM": 160.0, "L1": 42.0, "mac": 6.0}
    assert res.steps == 4
    # the scalar MAC: 12 + 12 operand reads, 6 partial writes and reads besides: 58 pJ
    scalar = evaluate(layer, blocking, Hierarchy((dram, local), mac_energy_pj=0.5), ONE)
    assert scalar.energy_pj == {"DRAM": 160.0, "L1": 58.0, "mac": 6.0}
    assert scalar.steps == 12


def test_lanes_beyond_the_block_and_grouped_layer() -> None:
    """M unrolled by 8 over an inner block of 2 maps (6 lanes idle), C by 3 over 2 (one
    idle), on a 2-group layer (4 maps per group), checked against the executor. By hand, per
    group: K = 2 kernel positions; X: 2 blocks of 1 → 2 steps; Y: 1 block of 2, one lane → 2;
    C: 2 blocks of 2, 3 lanes → 2; M: 2 blocks of 2, 8 lanes → 2; N: 1. Steps 2·2·2·2·2 = 32
    per group, 64 in all; a step's weights: min(8, 2)·min(3, 2) = 4."""
    layer = ConvLayer(name="g", Ox=2, Oy=2, Oc=8, Kx=2, Ky=1, Kc=4, groups=2)
    blocking = Blocking.of([GROUP0, DIMS], [{"X": 1, "Y": 2, "C": 2, "M": 2, "N": 1}],
                           {"I": [11], "W": [8], "O": [-1]})
    dp = Datapath({"M": 8, "C": 3})
    _check(layer, blocking, dp)
    model = {t.array: t for t in transfers(layer, blocking, datapath=dp) if t.level == 2}
    assert model["W"].footprint == 4
    assert model["I"].refills == 64


@pytest.mark.parametrize("unroll", [{"C": 16, "M": 16}, {"X": 4, "N": 2}])
def test_shipped_style_datapath_counts_per_mac(unroll) -> None:
    """Whole blocks of the lanes: operands per MAC are 1/lanes of the broadcast dimensions
    (seed 001 §4.2: C16×M16 reads 16 inputs and 256 weights and writes 16 sums per step of
    256 MACs)."""
    layer = ConvLayer(name="c", Ox=4, Oy=4, Oc=32, On=2, Kx=3, Ky=3, Kc=32, Px=1, Py=1)
    blocking = Blocking.of([GROUP0, DIMS], [{"X": 4, "Y": 4, "C": 16, "M": 16, "N": 2}],
                           {a: [6] for a in ARRAYS})
    dp = Datapath(unroll)
    model = {t.array: t for t in transfers(layer, blocking, datapath=dp) if t.level == 2}
    macs = layer.macs
    lanes = {d: dp.lanes(d) for d in DIMS}
    assert model["I"].moved * lanes["M"] == macs
    assert model["W"].moved * lanes["X"] * lanes["Y"] * lanes["N"] == macs
    assert model["O"].moved * lanes["C"] == macs
    assert model["I"].refills * dp.macs_per_step == macs


# --- table 3 below 1 KB (register files; the seed's energies are unpublished) -----------------

# seed 001 table 3, pJ per 16 bits at 64, 128, 256, 512 bits, as printed: the 1 KB and 8 KB rows
TABLE3_1KB, TABLE3_8KB = (1.20, 0.93, 0.69, 0.57), (3.19, 2.71, 2.21, 1.33)


def test_table3_extension_below_1kb() -> None:
    """The rule: per width, each halving below 1 KB divides by g, the geometric mean over the
    widths of the per-doubling growth from 1 to 8 KB, (Π E8/E1)^(1/12); down to 0.25 KB, the
    seed's smallest SRAM, which also covers anything smaller. Without the flag the 1 KB row
    covers everything below 1 KB (unchanged)."""
    from workbench.platforms import memory_energy_pj_per_16b as energy

    g = math.prod(b / a for a, b in zip(TABLE3_1KB, TABLE3_8KB, strict=True)) ** (1 / 12)
    assert g == pytest.approx(1.402, abs=5e-4)
    for w, one_kb in zip((64, 128, 256, 512), TABLE3_1KB, strict=True):
        ext = {kb: energy(kb * 1024, w, extend_below_1kb=True)
               for kb in (0.1, 0.25, 0.3, 0.5, 0.75, 1, 2)}
        assert ext[0.1] == ext[0.25] == pytest.approx(one_kb / g**2, rel=1e-12)
        assert ext[0.3] == ext[0.5] == pytest.approx(one_kb / g, rel=1e-12)
        assert ext[0.75] == ext[1] == one_kb
        assert list(ext.values()) == sorted(ext.values())
        assert energy(0.1 * 1024, w) == one_kb


def test_shipped_diannao_hierarchy() -> None:
    """data/hierarchies/seed001_diannao.yaml: DianNao's 2/32/2 KB buffers (seed 001 §5.2) and
    the §4.2 datapath, 256 MACs per cycle at 500 MHz reducing 16 inputs against 256 kernel
    values to 16 partial outputs, 1 pJ per MAC (fig. 5), DRAM 320 pJ per 16 bits (table 3)."""
    from workbench.hierarchy import SplitCapacity, hierarchy_from_dict
    from workbench.layers.zoo import read_yaml
    from workbench.paths import data_file

    path = data_file("hierarchies", "seed001_diannao.yaml")
    hier = hierarchy_from_dict(read_yaml(path, "hierarchy"), str(path))
    dram, buffers = hier.levels
    assert buffers.capacity_bytes == SplitCapacity(2 * 1024, 32 * 1024, 2 * 1024)
    assert dram.energy_pj == 320 and dram.access_bits == 16 and hier.mac_energy_pj == 1
    dp = hier.datapath
    assert dp.macs_per_step == 256 and dp.clock_mhz == 500
    # one step of a 16×16 (C, M) block: 16 inputs, 256 weights, 16 partial outputs
    layer = ConvLayer(name="fc", Ox=1, Oy=1, Oc=16, Kc=16)
    blocking = Blocking.of([GROUP0], [], {a: [6] for a in ARRAYS})
    fetched = {t.array: t.moved for t in transfers(layer, blocking, datapath=dp) if t.level == 2}
    assert fetched == {"I": 16, "W": 256, "O": 16}


def _level_buffers(layer: ConvLayer, blocking: Blocking, dp: Datapath | None) -> dict:
    """{array: eq. 2's buffer at the one on-chip level}, by `transfers`."""
    return {t.array: t.buffer for t in transfers(layer, blocking, datapath=dp) if t.level == 1}


def test_weights_of_a_step_stay_together_by_hand() -> None:
    """3 output columns, 4 output maps, M unrolled by 2; group 0 runs X inside M and the
    weights' buffer encloses both. Scalar eq. 2: X carries the weights' reuse, so one weight
    stays while X runs. In step time each step multiplies 2 maps' weights (M's lanes) and X
    walks 3 steps inside each M step: 2 weights stay, what the executor finds live. The
    partial sums, buffered around X alone, cannot be: a step spans 2 maps' outputs, which that
    buffer refills one map at a time (`check_steps`: refused)."""
    layer = ConvLayer(name="w", Ox=3, Oy=1, Oc=4)
    order0 = ("X", "M", "FX", "FY", "Y", "C", "N")
    blocking = Blocking.of([order0], [], {"I": [6], "W": [1], "O": [6]})
    dp = Datapath({"M": 2})
    assert _level_buffers(layer, blocking, None)["W"] == 1
    assert _level_buffers(layer, blocking, dp)["W"] == 2
    assert executor.execute(layer, blocking, dp)[("W", 1)]["live"] == 2
    assert executor.execute(layer, blocking)[("W", 1)]["live"] == 1
    # the inputs: M carries their reuse, 3 stay; the outputs: nothing carries it, a step's 2
    # (scalar: 1); 3 + 2 + 2 = 7 elements overflow 6, the scalar's 3 + 1 + 1 = 5 do not
    hier = Hierarchy((Level("DRAM", None, 8, 10.0), Level("L1", 6, 8, 1.0)), datapath=dp)
    assert _level_buffers(layer, blocking, dp) == {"I": 3, "W": 2, "O": 2}
    assert not evaluate(layer, blocking, hier, ONE).fits
    assert evaluate(layer, blocking, Hierarchy(hier.levels), ONE).fits
    short = Blocking.of([order0], [], {"I": [6], "W": [1], "O": [0]})
    with pytest.raises(WorkbenchError, match="buffer of O holds less than one datapath step"):
        evaluate(layer, short, hier, ONE)


def test_partial_sums_of_a_step_stay_together_by_hand() -> None:
    """4 output columns, 2 input maps, X unrolled by 2; group 0 runs C inside X and the
    outputs' buffer encloses both. Scalar: C carries the partial sums, one stays while C
    runs; in step time a step accumulates 2 columns (X's lanes) over C: 2 stay. With C
    unrolled instead, its lanes are summed by the adder tree in one step: C carries nothing
    and the buffer is one output at a time (the executor agrees)."""
    layer = ConvLayer(name="o", Ox=4, Oy=1, Oc=1, Kc=2)
    order0 = ("C", "X", "FX", "FY", "Y", "M", "N")
    blocking = Blocking.of([order0], [], {"I": [6], "W": [6], "O": [1]})
    for dp, expect in ((None, 1), (Datapath({"X": 2}), 2), (Datapath({"C": 2}), 1)):
        assert _level_buffers(layer, blocking, dp)["O"] == expect, dp
        assert executor.execute(layer, blocking, dp)[("O", 1)]["live"] == expect, dp


@st.composite
def unrolled_search_case(draw: st.DrawFn):
    """A row of 3-8 outputs under a 2- or 3-wide kernel, 1-2 input and output maps, on a
    datapath unrolling X by 2-4 (with or without C or M by 2), and one or two small on-chip
    levels (shared or split): a step's neighbouring outputs share input columns."""
    layer = ConvLayer(name="u", Ox=draw(st.integers(3, 8)), Oy=1, Kx=draw(st.integers(2, 3)),
                      Sx=draw(st.integers(1, 2)), Oc=draw(st.integers(1, 2)),
                      Kc=draw(st.integers(1, 2)))
    levels = [Level("DRAM", None, 16, draw(st.floats(50, 300)))]
    cap = 64
    for i in range(draw(st.integers(1, 2))):
        cap = draw(st.integers(2, min(cap, 16 if i else 24)))
        if cap >= 3 and draw(st.booleans()):
            a = draw(st.integers(1, cap - 2))
            w = draw(st.integers(1, cap - a - 1))
            levels.append(Level(f"L{i + 1}", SplitCapacity(a, w, cap - a - w), 16, 1.0 / (i + 1)))
        else:
            levels.append(Level(f"L{i + 1}", cap, 16, 1.0 / (i + 1)))
    unroll = {"X": draw(st.integers(2, 4))}
    unroll.update({d: 2 for d in draw(st.sets(st.sampled_from("CM"), max_size=1))})
    return layer, Hierarchy(tuple(levels), mac_energy_pj=0.5, datapath=Datapath(unroll))


@settings(max_examples=examples(60), deadline=None)
@given(case=unrolled_search_case())
def test_searched_buffers_hold_what_the_steps_keep_live(case) -> None:
    """On a datapath unrolling X, the search's blocking fits by `evaluate`, and at every
    on-chip level the elements the literal execution keeps live at once, in step time (a
    step's operands together), fit the level: before buffers were sized in step time, S held
    the inputs rolling along an unrolled X by one column's window, and 14 of 84 searches of
    4-8 columns (X by 2 or 4) overflowed 6-12 element register files by 1-3 elements."""
    layer, hier = case
    prec = ElementBytes(1, 1, 1, 2)
    try:
        found = search(layer, hier, prec)
    except NoFitError:
        return
    assert evaluate(layer, found.blocking, hier, prec).fits
    ran = executor.execute(layer, found.blocking, hier.datapath)
    width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}
    for k, level in enumerate(hier.levels[1:], start=1):
        live = {a: ran[(a, k)]["live"] * width[a] for a in ARRAYS if (a, k) in ran}
        if isinstance(level.capacity_bytes, SplitCapacity):
            assert all(v <= level.bytes_for(a) for a, v in live.items()), (live, level)
        else:
            assert sum(live.values()) <= level.total_bytes, (live, level)

"""N-level blocking model (workbench.hierarchy): model == literal executor for 2–4 levels, one
level == seed 002 and seed 000, seed 001 table 2 on table 4's layers, hierarchy parser errors,
and the exact search == brute force over its space."""

from __future__ import annotations

import math

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import tiling
from workbench.errors import WorkbenchError
from workbench.hierarchy import (
    ARRAYS,
    DIMS,
    GROUP0,
    BankedCapacity,
    Blocking,
    ElementBytes,
    Hierarchy,
    HierarchyError,
    Level,
    SplitCapacity,
    capacity_violations,
    energy_pj,
    evaluate,
    executor,
    hierarchy_from_dict,
    level_accesses,
    refetch_rates,
    search,
    transfers,
)
from workbench.hierarchy.convert import from_dataflow, from_seed000
from workbench.layers import ConvLayer
from workbench.layers.dims import LAYER_DIMS
from workbench.tiling import dataflow as df

ONE = df.Precision(1, 1, 1, 1)


@st.composite
def small_layer(draw: st.DrawFn) -> ConvLayer:
    k = draw(st.integers(1, 3))
    s = draw(st.integers(1, 2))
    return ConvLayer(name="h", Ox=draw(st.integers(1, 5)), Oy=draw(st.integers(1, 4)),
                     Oc=draw(st.integers(1, 3)), On=draw(st.integers(1, 2)), Kx=k,
                     Ky=draw(st.integers(1, 3)), Kc=draw(st.integers(1, 3)), Sx=s,
                     Sy=draw(st.integers(1, 2)), Px=draw(st.integers(0, (k - 1) // 2)), Py=0)


def _extent(layer: ConvLayer, dim: str) -> int:
    return {"X": layer.Ox, "Y": layer.Oy, "C": layer.Kc, "M": layer.Oc // layer.groups,
            "N": layer.On}[dim]


@st.composite
def blocking_case(draw: st.DrawFn, on_chip: int, layers: st.SearchStrategy | None = None,
                  max_groups: int = 4) -> tuple[ConvLayer, Blocking]:
    """A small layer (from `layers`, default `small_layer`), 1–max_groups loop groups with
    divisor-chained tiles, random orders and random buffering positions (about one in four
    levels bypassed) for `on_chip` levels."""
    layer = draw(small_layer() if layers is None else layers)
    groups = draw(st.integers(1, max_groups))
    chains = []
    for dim in DIMS:
        chain = [draw(st.integers(1, _extent(layer, dim)))]
        for _ in range(groups - 2):
            top = chain[-1]
            chain.append(draw(st.sampled_from([d for d in range(1, top + 1) if top % d == 0])))
        chains.append(chain[::-1])
    tiles = [{dim: chains[d][g] for d, dim in enumerate(DIMS)} for g in range(groups - 1)]
    orders = [draw(st.permutations(GROUP0))] + [draw(st.permutations(DIMS))
                                                for _ in range(groups - 1)]
    loops = len(GROUP0) + len(DIMS) * (groups - 1)
    buffers = {}
    for array in ARRAYS:
        positions = sorted((draw(st.integers(-1, loops - 1)) for _ in range(on_chip)),
                           reverse=True)
        buffers[array] = [None if draw(st.integers(0, 3)) == 0 else p for p in positions]
    return layer, Blocking.of(orders, tiles, buffers)


def _check_against_executor(layer: ConvLayer, blocking: Blocking) -> None:
    ran = executor.execute(layer, blocking)
    model = transfers(layer, blocking)
    assert {(t.array, t.level) for t in model} == set(ran)
    for t in model:
        got = ran[(t.array, t.level)]
        where = f"{t.array} at level {t.level} (position {t.position}): {blocking.describe()}"
        assert t.moved == got["moved"], where
        assert t.partial_reads == got["partial_reads"], where
        assert t.final_writes == got["final_writes"], where
        assert t.distinct == got["distinct"], where
        assert t.buffer >= got["live"], where  # eq. 2 buffers suffice
        if t.array != "I":  # no sliding windows: eq. 2 is exactly the live data
            assert t.buffer == got["live"], where


@settings(max_examples=examples(300))
@given(case=blocking_case(on_chip=1))
def test_two_levels_model_equals_executor(case) -> None:
    """N = 2 (DRAM + one on-chip level): model counts equal the literal executor."""
    _check_against_executor(*case)


@settings(max_examples=examples(300))
@given(case=blocking_case(on_chip=2))
def test_three_levels_model_equals_executor(case) -> None:
    _check_against_executor(*case)


@settings(max_examples=examples(300))
@given(case=blocking_case(on_chip=3))
def test_four_levels_model_equals_executor(case) -> None:
    _check_against_executor(*case)


def test_grouped_layer_is_groups_independent_convolutions() -> None:
    grouped = ConvLayer(name="g", Ox=3, Oy=2, Oc=4, Kx=2, Ky=2, Kc=2, groups=2)
    single = ConvLayer(name="g1", Ox=3, Oy=2, Oc=2, Kx=2, Ky=2, Kc=2)
    blocking = Blocking.of([GROUP0, DIMS], [{"X": 1, "Y": 2, "C": 1, "M": 2, "N": 1}],
                           {"I": [9, 5], "W": [11, 7], "O": [None, 6]})
    _check_against_executor(grouped, blocking)
    for g, s in zip(transfers(grouped, blocking), transfers(single, blocking), strict=True):
        assert (g.moved, g.partial_reads, g.final_writes, g.distinct) == \
            (2 * s.moved, 2 * s.partial_reads, 2 * s.final_writes, 2 * s.distinct)
        assert (g.footprint, g.buffer) == (s.footprint, s.buffer)


def test_executor_refuses_large_layers() -> None:
    layer = ConvLayer(name="big", Ox=56, Oy=56, Oc=64, Kx=3, Ky=3, Kc=64)
    blocking = Blocking.of([GROUP0], [], {a: [6] for a in ARRAYS})
    with pytest.raises(WorkbenchError, match="at most .* loop iterations"):
        executor.execute(layer, blocking)


# --- one on-chip level: today's seed 002 and seed 000 models ---------------------------------

@st.composite
def seed002_schedule(draw: st.DrawFn):
    layer = draw(small_layer())
    e = df.extents(layer)
    tiles = {d: draw(st.integers(1, e[d])) for d in LAYER_DIMS}
    order = tuple(draw(st.permutations(df.ELEMENT_LOOPS))) + \
        tuple(draw(st.permutations(df.CONTROL_LOOPS)))
    levels = {a: draw(st.integers(-1, 11)) for a in ARRAYS}
    return layer, df.DataflowSchedule(order, tiles, levels)


def _dram_traffic(model) -> dict[str, int]:
    """Elements crossing the DRAM boundary by kind (seed 002 eq. 4 with P = 1)."""
    top = {t.array: t for t in model if t.source == 0}
    return {"I": top["I"].moved, "W": top["W"].moved, "O_final": top["O"].final_writes,
            "O_acc": top["O"].partial_writes + top["O"].partial_reads}


@settings(max_examples=examples(300))
@given(case=seed002_schedule())
def test_one_level_equals_seed002(case) -> None:
    layer, sched = case
    model = {t.array: t for t in transfers(layer, from_dataflow(sched)) if t.source == 0}
    for array in ARRAYS:
        buf, traffic = df.array_options(layer, sched.order, sched.tiles, array)
        level = sched.levels[array] + 1
        assert model[array].moved == int(traffic[level]), array
        assert model[array].buffer == int(buf[level]), array
    old = df.evaluate(layer, sched, ONE)
    new = _dram_traffic(transfers(layer, from_dataflow(sched)))
    assert (new["I"], new["W"], new["O_final"], new["O_acc"]) == \
        (old["T_I"], old["T_W"], old["T_O_final"], old["T_O_acc"])


@settings(max_examples=examples(200))
@given(layer=small_layer(), data=st.data())
def test_one_level_equals_seed000_where_expressible(layer: ConvLayer, data) -> None:
    """tiling.counts (seed 000) exactly, for all five schedules, where seed 000's dense input
    boxes equal the touched rows and columns (K ≥ S)."""
    if layer.Kx < layer.Sx or layer.Ky < layer.Sy:
        return
    tile = tiling.Tile(*(data.draw(st.integers(1, d)) for d in tiling.dims(layer)))
    for name in tiling.SCHEDULES:
        seed000 = tiling.counts(layer, tile, name)
        model = transfers(layer, from_seed000(name, tile))
        assert sum(_dram_traffic(model).values()) == seed000.ext_accesses, name
        on_chip = sum(t.buffer for t in model if t.level == 1)
        assert on_chip <= seed000.footprint_elems, name



@settings(max_examples=examples(200))
@given(layer=small_layer(), data=st.data())
def test_seed000_trace_equals_the_one_executor(layer: ConvLayer, data) -> None:
    """The seed 000 trace (tile by tile, DMA boxes) and the hierarchy executor (element by
    element, refills by loop position) count the same traffic for the five schedules as
    one-level blockings, where seed 000's dense boxes are the touched data (K ≥ S); and the
    same DMA transfers (one per refill, plus a get for each partial sum read back) except
    for the direction-x schedule, whose column-by-column gets the blocking holds as one
    refill per row of tiles."""
    if layer.Kx < layer.Sx or layer.Ky < layer.Sy:
        return
    tile = tiling.Tile(*(data.draw(st.integers(1, d)) for d in tiling.dims(layer)))
    for name in tiling.SCHEDULES:
        traced = tiling.trace(layer, tile, name)
        ran = executor.execute(layer, from_seed000(name, tile))
        i, w, o = (ran[(a, 1)] for a in ARRAYS)
        assert (traced.in_accesses, traced.w_accesses, traced.out_accesses) == \
            (i["moved"], w["moved"], o["moved"] + o["partial_reads"]), name
        if name != "inter_oxoyon_dirx":
            refills = i["refills"] + w["refills"] + o["refills"] + o["reread_refills"]
            assert traced.dma_transfers == refills, name

# --- seed 001 table 2 on table 4's layers -----------------------------------------------------

# seed 001 table 4: X, Y, C, K (output maps), Fw, Fh, as printed (FC: X = Y = Fw = Fh = 1);
# stride 1
TABLE4 = {"Conv1": (256, 256, 256, 384, 11, 11), "Conv2": (500, 375, 32, 48, 9, 9),
          "Conv3": (32, 32, 108, 200, 4, 4), "Conv4": (56, 56, 128, 256, 3, 3),
          "Conv5": (28, 28, 256, 512, 3, 3), "FC1": (1, 1, 200, 100, 1, 1),
          "FC2": (1, 1, 4096, 4096, 1, 1)}
# inner block (X_{i-1}, Y_{i-1}, C_{i-1}, K_{i-1}) and the new loop's range at level i, per
# layer: divisors of the layer, chosen by hand
BLOCKS = {"Conv1": ((16, 8, 16, 32), {"M": 192, "C": 64, "X": 64, "Y": 32}),
          "Conv2": ((25, 15, 8, 12), {"M": 48, "C": 16, "X": 100, "Y": 75}),
          "Conv3": ((8, 4, 12, 20), {"M": 100, "C": 36, "X": 32, "Y": 16}),
          "Conv4": ((7, 8, 16, 32), {"M": 128, "C": 64, "X": 28, "Y": 56}),
          "Conv5": ((7, 4, 32, 64), {"M": 256, "C": 128, "X": 14, "Y": 28}),
          "FC1": ((1, 1, 20, 10), {"M": 50, "C": 40}),
          "FC2": ((1, 1, 256, 512), {"M": 2048, "C": 1024})}


def _table2_case(name: str, new: str):
    """Two on-chip levels: level 2 buffers the inner block once per execution (position 6,
    every group-0 loop inside), level 1 buffers at the new loop, the innermost loop of
    group 1 (seed 001 table 2: a buffer added at level i over level i−1's loops)."""
    x, y, c, k, fw, fh = TABLE4[name]
    layer = ConvLayer(name=name, Ox=x, Oy=y, Oc=k, Kc=c, Kx=fw, Ky=fh)
    (x0, y0, c0, k0), ranges = BLOCKS[name]
    inner = {"X": x0, "Y": y0, "C": c0, "M": k0, "N": 1}
    outer = dict(inner, **{new: ranges[new]})
    order1 = (new,) + tuple(d for d in DIMS if d != new)
    array = {"M": "I", "C": "O", "X": "W", "Y": "W"}[new]
    buffers = {a: [7 if a == array else None, 6] for a in ARRAYS}
    blocking = Blocking.of([GROUP0, order1, DIMS], [inner, outer], buffers)
    model = {(t.array, t.level): t for t in transfers(layer, blocking)}
    return layer, (x0, y0, c0, k0, fw, fh), ranges[new], model[(array, 1)], model[(array, 2)]


def test_unknown_seed000_schedule() -> None:
    with pytest.raises(WorkbenchError, match="unknown seed 000 schedule 'diagonal'"):
        from_seed000("diagonal", tiling.Tile(1, 1, 1, 1, 1))


@pytest.mark.parametrize("name", sorted(TABLE4))
def test_table2_input_buffer_at_k_loop(name: str) -> None:
    """IB_i: size (Y_{i−1}+Fh−1)(X_{i−1}+Fw−1)C_{i−1}; refetch rate
    K_i(Y_{i−1}+Fh−1)(X_{i−1}+Fw−1)/(K_{i−1}Y_{i−1}X_{i−1}): reads served inwards per fill,
    per element of the block's X_{i−1}·Y_{i−1}·C_{i−1} positions."""
    _, (x0, y0, c0, k0, fw, fh), ki, level1, level2 = _table2_case(name, "M")
    assert level1.buffer == (y0 + fh - 1) * (x0 + fw - 1) * c0
    served_per_fill = level2.moved / level1.refills
    assert served_per_fill / (x0 * y0 * c0) == pytest.approx(
        ki * (y0 + fh - 1) * (x0 + fw - 1) / (k0 * y0 * x0), rel=1e-12)


@pytest.mark.parametrize("name", sorted(TABLE4))
def test_table2_output_buffer_at_c_loop(name: str) -> None:
    """OB_i: size Y_{i−1}X_{i−1}K_{i−1}; refetch rate 2C_i/C_{i−1} (a read and a write per
    reduction step). The seed also reads each output's initial zero, which the model does not
    (its first partial sum starts from zero): one read per output apart."""
    layer, (x0, y0, c0, k0, _, _), ci, level1, level2 = _table2_case(name, "C")
    ob = y0 * x0 * k0
    assert level1.buffer == ob
    served = level2.moved + level2.partial_reads  # write-backs into and reads out of OB_i
    outputs = layer.Ox * layer.Oy * layer.Oc
    assert (served + outputs) / (level1.refills * ob) == pytest.approx(2 * ci / c0, rel=1e-12)


@pytest.mark.parametrize("name", [n for n in sorted(TABLE4) if n.startswith("Conv")])
@pytest.mark.parametrize("new", ["X", "Y"])
def test_table2_kernel_buffer_at_xy_loop(name: str, new: str) -> None:
    """KB_i: size C_{i−1}K_{i−1}FhFw; refetch rate X_iY_i/(X_{i−1}Y_{i−1})."""
    _, (x0, y0, c0, k0, fw, fh), range_i, level1, level2 = _table2_case(name, new)
    kb = c0 * k0 * fh * fw
    assert level1.buffer == kb
    xi, yi = (range_i, y0) if new == "X" else (x0, range_i)
    assert level2.moved / level1.refills / kb == pytest.approx(xi * yi / (x0 * y0), rel=1e-12)


def test_refetch_rates_chain_to_accesses() -> None:
    """Seed 001 eq. 1: what a level passes inwards = α × Π of the rates from DRAM to it."""
    layer = ConvLayer(name="Conv4", Ox=56, Oy=56, Oc=256, Kc=128, Kx=3, Ky=3)
    blocking = Blocking.of([GROUP0, ("X",) + DIMS[1:], DIMS],
                           [{"X": 7, "Y": 8, "C": 16, "M": 32, "N": 1},
                            {"X": 28, "Y": 8, "C": 16, "M": 32, "N": 1}],
                           {"I": [12, 6], "W": [7, 6], "O": [8, 6]})
    model = transfers(layer, blocking)
    for array in ARRAYS:
        rates = refetch_rates(model, array)
        chain = [t for t in model if t.array == array]
        alpha = chain[0].distinct
        for t in chain:
            product = math.prod(r for lvl, r in rates.items() if lvl < t.level)
            assert t.moved == pytest.approx(alpha * product, rel=1e-12), (array, t.level)
    # W's outer on-chip buffer sits at X1 (28 columns): DRAM sends the weights once per
    # outermost (X, Y) block, 56/28 · 56/8 = 14 times
    assert refetch_rates(model, "W")[0] == 14


# --- accesses, energy, capacity ---------------------------------------------------------------

def test_accesses_and_energy_by_hand() -> None:
    """A 2-output, 2-input-map 1×1 layer held whole on chip (worked out by hand):
    DRAM reads 4 inputs and 2 weights and receives 2 final outputs; the on-chip level writes
    4 + 2, serves 4 + 4 operand reads to the datapath, receives 4 MAC write-backs (2 partial,
    2 final), serves 2 partial-sum reads, and reads the 2 finals out to DRAM."""
    layer = ConvLayer(name="fc", Ox=2, Oy=1, Oc=1, Kc=2)
    blocking = Blocking.of([GROUP0], [], {a: [6] for a in ARRAYS})
    model = transfers(layer, blocking)
    dram, local = level_accesses(model, 2)
    assert dram.reads == (4, 2, 0, 0) and dram.writes == (0, 0, 0, 2)
    assert local.writes == (4, 2, 2, 2) and local.reads == (4, 4, 2, 2)
    hier = Hierarchy((Level("DRAM", None, 16, energy_pj=10.0),
                      Level("SRAM", 64, 16, energy_pj=None)), mac_energy_pj=0.5)
    energy = energy_pj(model, hier, df.Precision(2, 2, 2, 2), size_energy=lambda size, bits: 1.0)
    assert energy == {"DRAM": 80.0, "SRAM": 22.0, "mac": 2.0}
    wide = df.Precision(2, 2, 2, 4)  # partial sums twice as wide: 4 partial accesses cost 2
    assert energy_pj(model, hier, wide, lambda size, bits: 1.0)["SRAM"] == 26.0
    with pytest.raises(HierarchyError, match="no size-to-energy rule"):
        energy_pj(model, hier, ONE)


def test_bypass_by_hand() -> None:
    """DRAM, SRAM, RF; a 1×1 layer with 2 columns and 2 output maps (4 MACs), no tiling. W
    bypasses the SRAM (RF fed from DRAM), I sits whole in the SRAM and streams through the RF
    (position −1: one element per MAC), O sits whole in both. By hand: DRAM reads 2 inputs
    (to SRAM) and 2 weights (to RF) and receives the 4 final outputs; SRAM writes 2 inputs,
    serves 4 input fetches, receives 4 finals from the RF and sends them out; RF receives 4
    inputs and 2 weights, serves 4 + 4 operands to the datapath, is written each output once
    (one input map: no partial sums) and reads the 4 out."""
    layer = ConvLayer(name="fc", Ox=2, Oy=1, Oc=2, Kc=1)
    blocking = Blocking.of([GROUP0], [], {"I": [6, -1], "W": [None, 6], "O": [6, 6]})
    hier = Hierarchy((Level("DRAM", None, 8, 100.0), Level("SRAM", 1024, 8, 10.0),
                      Level("RF", 16, 8, 1.0)))
    result = evaluate(layer, blocking, hier, ONE)
    dram, sram, rf = result.accesses
    assert (dram.reads, dram.writes) == ((2, 2, 0, 0), (0, 0, 0, 4))
    assert (sram.reads, sram.writes) == ((4, 0, 0, 4), (2, 0, 0, 4))
    assert (rf.reads, rf.writes) == ((4, 4, 0, 4), (4, 2, 0, 4))
    (w_rf,) = [t for t in result.transfers if t.array == "W" and t.level == 2]
    assert w_rf.source == 0
    assert result.energy_pj == {"DRAM": 800.0, "SRAM": 140.0, "RF": 22.0, "mac": 0.0}
    assert result.fits and result.total_energy_pj == 962.0


def test_capacity_shared_and_split() -> None:
    layer = ConvLayer(name="fc", Ox=2, Oy=1, Oc=1, Kc=2)
    model = transfers(layer, Blocking.of([GROUP0], [], {a: [6] for a in ARRAYS}))
    # loop order FX FY X Y C M N: each input is used once (one output map), so I needs 1
    # element; W's reuse is carried by X, over which only the one weight of the current C
    # stays: 1; O is carried by C (2 iterations) with both outputs inside: 2. With 2-byte
    # data and 4-byte sums: 2 + 2 + 8 = 12 bytes
    prec = df.Precision(2, 2, 2, 4)

    def hier(cap) -> Hierarchy:
        return Hierarchy((Level("DRAM", None, 64, 1.0), Level("L1", cap, 16, 1.0)))

    assert capacity_violations(model, hier(12), prec) == []
    assert capacity_violations(model, hier(11), prec) == ["L1: buffers need 12 B of 11 B"]
    assert capacity_violations(model, hier(SplitCapacity(2, 2, 8)), prec) == []
    assert capacity_violations(model, hier(SplitCapacity(2, 2, 7)), prec) == \
        ["L1: O needs 8 B of 7 B"]
    # a split level with room for inputs only cannot hold W and O, however large
    assert capacity_violations(model, hier(SplitCapacity(64, 0, 0)), prec) == \
        ["L1: W needs 2 B of 0 B", "L1: O needs 8 B of 0 B"]


def test_blocking_rules() -> None:
    with pytest.raises(WorkbenchError, match="group 0 orders the loops"):
        Blocking.of([DIMS], [], {a: [0] for a in ARRAYS})
    with pytest.raises(WorkbenchError, match=r"must be multiples of tiles\[0\]"):
        Blocking.of([GROUP0, DIMS, DIMS], [dict.fromkeys(DIMS, 2), dict.fromkeys(DIMS, 3)],
                    {a: [0] for a in ARRAYS})
    with pytest.raises(WorkbenchError, match="must not grow inwards"):
        Blocking.of([GROUP0], [], {"I": [2, 5], "W": [0, 0], "O": [0, 0]})
    with pytest.raises(WorkbenchError, match="loop index -1...6"):
        Blocking.of([GROUP0], [], {"I": [7], "W": [0], "O": [0]})
    with pytest.raises(WorkbenchError, match=r"buffers needs exactly the keys"):
        Blocking.of([GROUP0], [], {"I": [1]})
    with pytest.raises(HierarchyError, match=r"^level 'rf': capacity: must be > 0"):
        Level("rf", -1, 8)
    layer = ConvLayer(name="t", Ox=4, Oy=4, Oc=2, Kc=2)
    with pytest.raises(WorkbenchError, match="exceeds the layer's X extent"):
        transfers(layer, Blocking.of([GROUP0, DIMS], [dict(dict.fromkeys(DIMS, 1), X=5)],
                                     {a: [0] for a in ARRAYS}))


# --- hierarchy documents ----------------------------------------------------------------------

def _doc() -> dict:
    return {"name": "three", "mac_energy_pj": 1.0, "levels": [
        {"name": "DRAM", "capacity": None, "access_bits": 64, "energy_pj": 320},
        {"name": "SRAM", "capacity": 65536, "access_bits": 64, "energy_pj": None},
        {"name": "RF", "capacity": {"I": 64, "W": 256, "O": 64}, "access_bits": 16,
         "energy_pj": 0.1, "bandwidth": 16, "area_mm2_per_kb": 0.02}]}


def test_good_document() -> None:
    hier = hierarchy_from_dict(_doc(), "three.yaml")
    assert [lvl.name for lvl in hier.levels] == ["DRAM", "SRAM", "RF"]
    assert hier.levels[2].capacity_bytes == SplitCapacity(64, 256, 64)
    assert hier.levels[2].bytes_for("W") == 256 and hier.levels[1].bytes_for("W") == 65536
    assert hier.levels[1].access_pj("I", lambda size, bits: size / bits) == 1024
    assert hier.levels[2].area_mm2 == pytest.approx(0.02 * 384 / 1024)
    split = Level("RF", SplitCapacity(64, 256, 64), 16, energy_pj=None)
    sizes = {a: split.access_pj(a, lambda size, bits: float(size)) for a in ARRAYS}
    assert sizes == {"I": 64.0, "W": 256.0, "O": 64.0}  # each part priced at its own size


@pytest.mark.parametrize(("capacity", "parsed"), [
    ({"I+O": 4096, "W": 32768}, BankedCapacity((("IO", 4096), ("W", 32768)))),
    ({"W": 512, "OI": 128}, BankedCapacity((("W", 512), ("IO", 128)))),
    ({"I": 64, "W+O": 0}, BankedCapacity((("I", 64), ("WO", 0)))),
    ({"I": 64, "W": 256, "O": 64}, SplitCapacity(64, 256, 64)),  # one array a key: split
    ({"I+W+O": 384}, 384),  # one bank of all three: shared
])
def test_banked_documents(capacity, parsed) -> None:
    """A capacity mapping names banks: the arrays sharing each one's bytes; each bank is a
    memory of its own size, priced at it when energy_pj is null, and the arrays of a bank
    fit it together."""
    doc = _doc()
    doc["levels"][2]["capacity"], doc["levels"][2]["energy_pj"] = capacity, None
    level = hierarchy_from_dict(doc, "banks.yaml").levels[2]
    assert level.capacity_bytes == parsed
    by_array = {a: sum(v for k, v in capacity.items() if a in k) for a in ARRAYS}
    assert {a: level.bytes_for(a) for a in ARRAYS} == by_array
    assert {a: level.access_pj(a, lambda size, bits: float(size)) for a in ARRAYS} == by_array
    assert level.total_bytes == sum(capacity.values())


def test_capacity_of_banks() -> None:
    """Buffers of a bank's arrays fit its bytes together; a bank of 0 B holds none."""
    layer = ConvLayer(name="fc", Ox=2, Oy=1, Oc=1, Kc=2)
    model = transfers(layer, Blocking.of([GROUP0], [], {a: [6] for a in ARRAYS}))
    prec = df.Precision(2, 2, 2, 4)  # I 2 B, W 2 B, O 8 B (test_capacity_shared_and_split)

    def hier(*banks) -> Hierarchy:
        return Hierarchy((Level("DRAM", None, 64, 1.0),
                          Level("L1", BankedCapacity(banks), 16, 1.0)))

    assert capacity_violations(model, hier(("IO", 10), ("W", 2)), prec) == []
    assert capacity_violations(model, hier(("IO", 9), ("W", 2)), prec) == \
        ["L1: I+O need 10 B of 9 B"]
    assert capacity_violations(model, hier(("IW", 4), ("O", 7)), prec) == \
        ["L1: O needs 8 B of 7 B"]
    assert capacity_violations(model, hier(("IW", 64), ("O", 0)), prec) == \
        ["L1: O needs 8 B of 0 B"]


def _set(path: str, value):
    def edit(doc: dict) -> dict:
        keys = path.replace("]", "").replace("[", ".").split(".")
        target = doc
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        last = keys[-1]
        if value is _DELETE:
            del target[int(last) if last.isdigit() else last]
        elif last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value
        return doc
    return edit


_DELETE = object()

BAD_DOCUMENTS = [
    (_set("levels[1].capacity", -5), "levels[1].capacity",
     "must be bytes (a whole number in 1..2^48)"),
    (_set("levels[1].capacity", 1.5), "levels[1].capacity", "whole number"),
    (_set("levels[1].capacity", 10**100), "levels[1].capacity", "1..2^48"),
    (_set("levels[1].energy_pj", 1e308), "levels[1].energy_pj", "<= 1e+06 (pJ per access)"),
    (_set("levels[2].bandwidth", 5e-324), "levels[2].bandwidth", ">= 1e-06"),
    (_set("levels[1].capacity", float("inf")), "levels[1].capacity", "got inf"),
    (_set("levels[1].capacity", "64KB"), "levels[1].capacity", "must be bytes"),
    (_set("levels[1].capacity", None), "levels[1].capacity", "only the outermost level"),
    (_set("levels[0].capacity", 1 << 30), "levels[0].capacity", "must be unbounded (null)"),
    (_set("levels[1].capacity", _DELETE), "levels[1].capacity", "is required"),
    (_set("levels[2].capacity", {"I": 64, "W": 256}), "levels[2].capacity",
     "array(s) O in no key"),
    (_set("levels[2].capacity", {"I": 64, "W": 256, "O": 64, "P": 1}), "levels[2].capacity",
     "a key must name arrays of I, W, O sharing its bytes ('I', 'I+O', ...), got 'P'"),
    (_set("levels[2].capacity", {"I+O": 64, "I": 8, "W": 256}), "levels[2].capacity",
     "array I is in two keys ('I+O', 'I')"),
    (_set("levels[2].capacity", {"I+I": 64, "W+O": 256}), "levels[2].capacity",
     "a key must name arrays"),
    (_set("levels[2].capacity", {"I+O": -1, "W": 256}), "levels[2].capacity",
     "bank 'I+O' must be a whole number of bytes in 0..2^48, got -1"),
    (_set("levels[2].capacity", {"I": 0, "W": 0, "O": 0}), "levels[2].capacity",
     "one bank > 0"),
    (_set("levels[2].capacity.W", -1), "levels[2].capacity", "bank 'W' must be"),
    (_set("levels[2].capacity", 131072), "levels[2].capacity", "must not increase inwards"),
    (_set("levels[1].access_bits", 0), "levels[1].access_bits", "must be a whole number in 1.."),
    (_set("levels[1].access_bits", 12.5), "levels[1].access_bits", "whole number"),
    (_set("levels[0].access_bits", _DELETE), "levels[0].access_bits", "is required"),
    (_set("levels[0].energy_pj", -1), "levels[0].energy_pj", "must be a number >= 0 and <= 1e+06"),
    (_set("levels[0].energy_pj", float("nan")), "levels[0].energy_pj", "got nan"),
    (_set("levels[2].bandwidth", 0), "levels[2].bandwidth", "must be a number >= 1e-06"),
    (_set("levels[2].bandwidth", True), "levels[2].bandwidth", "must be a number"),
    (_set("levels[2].area_mm2_per_kb", -0.1), "levels[2].area_mm2_per_kb",
     "must be a number >= 0"),
    (_set("levels[2].size", 3), "levels[2].size", "unknown key"),
    (_set("levels[2].name", "SRAM"), "levels[2].name", "must be unique"),
    (_set("levels[1].name", ""), "levels[1].name", "non-empty string"),
    (_set("levels[1]", [1, 2]), "levels[1]", "must be a mapping"),
    (_set("levels", []), "levels", "at least 2 items"),
    (_set("levels", {"DRAM": 1}), "levels", "must be a list"),
    (_set("mac_energy_pj", -2), "mac_energy_pj", "must be a number >= 0"),
    (_set("colour", "red"), "colour", "unknown key; known: datapath, levels"),
]


@pytest.mark.parametrize(("edit", "path", "rule"), BAD_DOCUMENTS,
                         ids=[f"{p}:{r}" for _, p, r in BAD_DOCUMENTS])
def test_bad_documents(edit, path: str, rule: str) -> None:
    with pytest.raises(HierarchyError) as info:
        hierarchy_from_dict(edit(_doc()), "hw.yaml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"hw.yaml: {path}"), message
    assert rule in message, message


def test_not_a_mapping() -> None:
    with pytest.raises(HierarchyError, match=r"^hw.yaml: \(document\): must be a mapping"):
        hierarchy_from_dict([1, 2], "hw.yaml")


def test_package_imports_neither_tiling_nor_platforms() -> None:
    """workbench.hierarchy is spec + model: platforms may describe levels with it, so it must
    not reach workbench.platforms (tiling's package imports it) or anything above."""
    import ast
    import subprocess
    import sys

    code = ("import sys, workbench.hierarchy, workbench.hierarchy.executor; "
            "print(sorted(m for m in sys.modules if m.startswith('workbench.')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    loaded = {m.split(".")[1] for m in ast.literal_eval(run.stdout)}
    assert loaded.isdisjoint({"tiling", "platforms", "perf", "explore", "viz", "ui", "cli",
                              "sweep"}), loaded


# --- exact search over the space R (workbench.hierarchy.search.r; S: test_hierarchy_search) --

def _brute_force_r(layer: ConvLayer, hier: Hierarchy, prec, size_energy=None) -> float:
    """The least energy over every blocking of R, priced by `evaluate` one by one: all divisor
    chains, canonical orders, each level holding every array it has room for at the end of
    its group, fit judged on block footprints."""
    import itertools

    levels = len(hier.levels) - 1
    chains = {d: search.gen_chains(_extent(layer, d), levels) for d in DIMS}
    ends = [len(GROUP0) - 1 + len(DIMS) * (levels - k) for k in range(1, levels + 1)]
    width = {"I": prec.inputs, "W": prec.weights, "O": prec.partial_sums}
    best = math.inf
    for combo in itertools.product(*(chains[d] for d in DIMS)):
        tiles = [{d: int(c[g]) for d, c in zip(DIMS, combo, strict=True)}
                 for g in range(levels)]
        buffers = {a: [p if hier.levels[k].bytes_for(a) > 0 else None
                       for k, p in enumerate(ends, start=1)] for a in ARRAYS}
        result = evaluate(layer, Blocking.of([GROUP0] + [DIMS] * levels, tiles, buffers), hier,
                          prec, size_energy)
        fits = True
        for k in range(1, levels + 1):
            used = {t.array: t.footprint * width[t.array] for t in result.transfers
                    if t.level == k}
            level = hier.levels[k]
            if isinstance(level.capacity_bytes, SplitCapacity):
                fits &= all(used.get(a, 0) <= level.bytes_for(a) for a in ARRAYS)
            else:
                fits &= sum(used.values()) <= level.total_bytes
        if fits:
            best = min(best, result.total_energy_pj)
    return best


SEARCH_CASES = {
    "two levels": (ConvLayer(name="s2", Ox=5, Oy=3, Oc=3, Kx=3, Ky=2, Kc=2, Sx=2),
                   Hierarchy((Level("DRAM", None, 32, 100.0), Level("L1", 40, 16, 2.0)),
                             mac_energy_pj=0.5), None),
    "three levels shared": (ConvLayer(name="s3", Ox=4, Oy=3, Oc=2, Kx=3, Ky=3, Kc=3, Sy=2),
                            Hierarchy((Level("DRAM", None, 64, 200.0),
                                       Level("SRAM", 160, 64, 6.0),
                                       Level("RF", 24, 16, 0.5)), mac_energy_pj=1.0), None),
    "three levels split, size-derived": (
        ConvLayer(name="s3s", Ox=4, Oy=2, Oc=4, Kx=2, Ky=2, Kc=2, On=2),
        Hierarchy((Level("DRAM", None, 64, 200.0),
                   Level("SRAM", SplitCapacity(48, 64, 0), 64, None),
                   Level("RF", 24, 16, None)), mac_energy_pj=1.0),
        lambda size, bits: 0.05 * math.sqrt(size) * bits / 16),
    "four levels": (ConvLayer(name="s4", Ox=4, Oy=2, Oc=2, Kx=2, Ky=1, Kc=2),
                    Hierarchy((Level("DRAM", None, 64, 100.0), Level("L2", 96, 64, 8.0),
                               Level("L1", 32, 32, 2.0), Level("RF", 12, 16, 0.25))), None),
}


@pytest.mark.parametrize("name", sorted(SEARCH_CASES))
def test_search_finds_the_brute_force_optimum(name: str) -> None:
    layer, hier, size_energy = SEARCH_CASES[name]
    prec = ElementBytes(1, 1, 1, 2)
    found = search.search_r(layer, hier, prec, size_energy)
    assert found.energy_pj == pytest.approx(_brute_force_r(layer, hier, prec, size_energy),
                                            rel=1e-12)
    again = evaluate(layer, found.blocking, hier, prec, size_energy)
    assert again.fits and again.total_energy_pj == pytest.approx(found.energy_pj, rel=1e-12)


def test_search_prunes_only_dominated_chains() -> None:
    for extent, levels in ((12, 1), (12, 2), (10, 3)):
        every = search.gen_chains(extent, levels)
        kept = search.nondominated_chains(extent, levels)
        assert 0 < len(kept) < len(every)

        def vector(chain, extent=extent):
            padded = -(-extent // chain[-1]) * chain[-1]
            return tuple(chain) + tuple(padded // t for t in chain) + (padded,)

        kept_vectors = [vector(c) for c in kept]
        for chain in every:  # every chain has a kept chain no worse in every component
            v = vector(chain)
            assert any(all(a <= b for a, b in zip(k, v, strict=True)) for k in kept_vectors)


def test_search_refuses_when_nothing_fits() -> None:
    layer = ConvLayer(name="big", Ox=4, Oy=4, Oc=2, Kx=5, Ky=5, Kc=2)
    hier = Hierarchy((Level("DRAM", None, 64, 100.0), Level("RF", 8, 16, 1.0)))
    with pytest.raises(WorkbenchError, match="no blocking fits"):
        search.search_r(layer, hier)


def test_counts_of_many_trip_counts_at_once_equal_each_alone() -> None:
    """footprint and buffer_size take arrays of trip counts (many tiles at once) and give, per
    element, what the Python-int path gives for that element alone: every position, array and
    a datapath unrolling X, on a 3-wide stride-1 kernel (windows overlap)."""
    import numpy as np

    from workbench.hierarchy.blocking import buffer_size, footprint

    layer = ConvLayer(name="v", Ox=8, Oy=4, Oc=4, Kx=3, Ky=3, Kc=2)
    loops = Blocking.of([("X", "FX", "Y", "FY", "C", "M", "N"), ("Y", "X", "C", "M", "N")],
                        [{"X": 2, "Y": 2, "C": 1, "M": 2, "N": 1}],
                        {"I": [None], "W": [None], "O": [None]}).loops
    grid = [(x, y, m) for x in (1, 2, 4, 8) for y in (1, 2, 4) for m in (1, 2, 4)]
    cols = np.array(grid).T
    n_vec = [cols[0], 3, cols[1], 3, 2, cols[2], 1, 8 // cols[0], 4 // cols[1], 1,
             4 // cols[2], 1]
    for lanes in (None, {"X": 2}):
        for position in range(-1, len(loops)):
            for array in ("I", "W", "O"):
                inside = set(range(position + 1))
                f_vec = footprint(layer, loops, n_vec, inside, array)
                b_vec = buffer_size(layer, loops, n_vec, position, array, None)
                for k, (x, y, m) in enumerate(grid):
                    n = [x, 3, y, 3, 2, m, 1, 8 // x, 4 // y, 1, 4 // m, 1]
                    assert int(np.broadcast_to(f_vec, cols[0].shape)[k]) == \
                        footprint(layer, loops, n, inside, array)
                    assert int(np.broadcast_to(b_vec, cols[0].shape)[k]) == \
                        buffer_size(layer, loops, n, position, array, None)
                    assert isinstance(buffer_size(layer, loops, n, position, array, lanes), int)


def test_hierarchy_values_have_physical_ranges() -> None:
    """A capacity of 10**100 was accepted (issue 58); each field now has the platform
    schema's physical range (`schemas.memory`), and 10**400 (beyond float) is refused by it
    too, never an OverflowError."""
    import pytest

    from workbench.hierarchy.levels import HierarchyError, hierarchy_from_dict

    def doc(**sram: object) -> dict:
        level = {"name": "SRAM", "capacity": 65536, "access_bits": 64, "energy_pj": 6.0} | sram
        return {"name": "h", "mac_energy_pj": 1.0, "levels": [
            {"name": "DRAM", "capacity": None, "access_bits": 16, "energy_pj": 320}, level]}

    hierarchy_from_dict(doc(capacity=2**48, energy_pj=1e6, bandwidth=1e-6), "h")  # the edges
    bad = {"capacity": [10**100, 2**48 + 1, {"I": 10**100, "W": 4, "O": 4}],
           "energy_pj": [1e308, 1e6 * 1.01], "bandwidth": [5e-324, 1e-7, 2.0**33],
           "access_bits": [2**17], "area_mm2_per_kb": [1e308]}
    for key, values in bad.items():
        for value in values:
            rule = r"(1\.\.2\^48|0\.\.2\^48|<= 1e\+06|>= 1e-06 and <= 1e\+09|1\.\.65,536|<= 1000)"
            with pytest.raises(HierarchyError, match=rule + ".*got ") as info:
                hierarchy_from_dict(doc(**{key: value}), "h")
            assert key in str(info.value) and len(str(info.value)) < 250, str(info.value)
    with pytest.raises(HierarchyError, match=r"capacity: must be bytes \(a whole number in "
                                             r"1\.\.2\^48\).*got 1000000000"):
        hierarchy_from_dict(doc(capacity=10**400), "h")
    with pytest.raises(HierarchyError, match=r"mac_energy_pj: must be a number >= 0 and "
                                             r"<= 1e\+06"):
        hierarchy_from_dict(doc() | {"mac_energy_pj": 1e308}, "h")

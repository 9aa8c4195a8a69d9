"""Feature-map fusion (seed 003 section 5.3): greedy vs exhaustive optimum vs a literal executor."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

from workbench import layers, tiling
from workbench.layers import ConvLayer
from workbench.platforms import load_platform

NVE = load_platform("nve")
NVE_BYTES = 65536  # data/platforms/nve.yaml local_mem_bytes, elem_bytes 1, no double buffer


def sparse_layer(table: list[list[int]], kc: int, ox: int = 3, oy: int = 2, k: int = 2,
                 s: int = 1, p: int = 0, n: int = 1) -> ConvLayer:
    return ConvLayer(name="sparse", Ox=ox, Oy=oy, Oc=len(table), On=n, Kx=k, Ky=k, Kc=kc, Sx=s,
                     Sy=s, Px=p, Py=p, connections=tuple(tuple(row) for row in table))


def shrunk(layer: ConvLayer) -> ConvLayer:
    """The same connection table and kernel on a 4 x 3 output (the executor runs it fast)."""
    return dataclasses.replace(layer, Ox=4, Oy=3)


# --- literal executor and direct reference ----------------------------------------------------

def execute(layer: ConvLayer, groups, x: np.ndarray, w: np.ndarray, cap_maps: int | None):
    """Run group by group with a simulated local buffer; count every external element moved.

    Returns (outputs, input elements loaded, weight elements loaded, output elements written).
    The buffer is emptied between groups; with cap_maps it never holds more input maps than
    that, unless a single program needs more on its own.
    """
    out = np.zeros((layer.On, layer.Oc, layer.Oy, layer.Ox), dtype=np.int64)
    pad = ((0, 0), (layer.Py, layer.Py), (layer.Px, layer.Px))
    in_loaded = w_loaded = out_written = 0
    for group in groups:
        resident: dict[int, np.ndarray] = {}
        for oc in group:
            acc = np.zeros((layer.On, layer.Oy, layer.Ox), dtype=np.int64)
            for i in layer.connections[oc]:
                if i not in resident:
                    resident[i] = np.pad(x[:, i], pad)          # DMA of one whole input map
                    in_loaded += layer.On * layer.Iy * layer.Ix
                    if cap_maps is not None and len(group) > 1:
                        assert len(resident) <= cap_maps
                kernel = w[oc, i]                               # DMA of one kernel
                w_loaded += layer.Ky * layer.Kx
                win = sliding_window_view(resident[i], (layer.Ky, layer.Kx), axis=(1, 2))
                win = win[:, ::layer.Sy, ::layer.Sx][:, :layer.Oy, :layer.Ox]
                acc += np.einsum("nyxab,ab->nyx", win, kernel)
            out[:, oc] = acc
            out_written += acc.size
    return out, in_loaded, w_loaded, out_written


def direct(layer: ConvLayer, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Dense convolution with the weights outside the connection table set to zero."""
    mask = np.zeros(w.shape[:2], dtype=np.int64)
    for oc, row in enumerate(layer.connections):
        mask[oc, list(row)] = 1
    wd = w * mask[:, :, None, None]
    xp = np.pad(x, ((0, 0), (0, 0), (layer.Py, layer.Py), (layer.Px, layer.Px)))
    out = np.zeros((layer.On, layer.Oc, layer.Oy, layer.Ox), dtype=np.int64)
    for ky in range(layer.Ky):
        for kx in range(layer.Kx):
            patch = xp[:, :, ky:ky + layer.Sy * (layer.Oy - 1) + 1:layer.Sy,
                       kx:kx + layer.Sx * (layer.Ox - 1) + 1:layer.Sx]
            out += np.einsum("niyx,oi->noyx", patch, wd[:, :, ky, kx])
    return out


def check_executor(layer: ConvLayer, groups, cap_maps: int | None, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-8, 8, size=(layer.On, layer.Kc, layer.Iy, layer.Ix))
    w = rng.integers(-8, 8, size=(layer.Oc, layer.Kc, layer.Ky, layer.Kx))
    out, ins, ws, outs = execute(layer, groups, x, w, cap_maps)
    np.testing.assert_array_equal(out, direct(layer, x, w))
    t = tiling.fmap_traffic(layer, groups)
    assert (ins, ws, outs) == (t.inputs, t.weights, t.outputs)


# --- brute force over set partitions ----------------------------------------------------------

def partitions(items: list[int]):
    if not items:
        yield []
        return
    head, rest = items[0], items[1:]
    for part in partitions(rest):
        yield [[head]] + part
        for j in range(len(part)):
            yield part[:j] + [[head] + part[j]] + part[j + 1:]


def union_size(layer: ConvLayer, group) -> int:
    return len(set().union(*(layer.connections[oc] for oc in group)))


def brute_force_loads(layer: ConvLayer, fits) -> int:
    """Fewest loads over all set partitions whose groups pass fits(group) (singletons always)."""
    return min(sum(union_size(layer, g) for g in part) for part in partitions(list(range(layer.Oc)))
               if all(len(g) == 1 or fits(g) for g in part))


@st.composite
def tables(draw: st.DrawFn) -> tuple[ConvLayer, int]:
    kc = draw(st.integers(1, 6))
    oc = draw(st.integers(1, 7))
    rows = [sorted(draw(st.sets(st.integers(0, kc - 1), min_size=1, max_size=kc)))
            for _ in range(oc)]
    k, s, p = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(0, 1))
    ox, oy = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    assume(layers.in_size(min(ox, oy), k, s, p) >= 1)
    layer = sparse_layer(rows, kc, ox=ox, oy=oy, k=k, s=s, p=p, n=draw(st.integers(1, 2)))
    return layer, draw(st.integers(1, kc + 1))


@settings(max_examples=examples(300))
@given(case=tables())
def test_greedy_optimum_and_executor_on_random_tables(case) -> None:
    layer, cap = case
    greedy = tiling.fuse_maps(layer, cap)
    best = tiling.optimal_groups(layer, cap)
    for groups in (greedy, best):
        assert sorted(oc for g in groups for oc in g) == list(range(layer.Oc))
        assert all(len(g) == 1 or union_size(layer, g) <= cap for g in groups)
    unfused = sum(len(row) for row in layer.connections)
    g_loads, b_loads = (tiling.fmap_traffic(layer, g).loads for g in (greedy, best))
    assert tiling.fmap_traffic(layer, tiling.unfused_groups(layer)).loads == unfused
    assert b_loads <= g_loads <= unfused
    assert b_loads == brute_force_loads(layer, lambda g: union_size(layer, g) <= cap)
    check_executor(layer, greedy, cap)
    check_executor(layer, tiling.unfused_groups(layer), cap)


@settings(max_examples=examples(150))
@given(case=tables(), budget=st.integers(1, 400), double=st.booleans())
def test_platform_capacity_in_bytes(case, budget: int, double: bool) -> None:
    layer, _ = case
    plat = NVE.replace(local_mem_bytes=budget, double_buffer=double, elem_bytes=2)
    usable = budget // 2 if double else budget

    def fits(g) -> bool:
        need = 2 * (union_size(layer, g) * layer.Ix * layer.Iy + len(g) * layer.Ox * layer.Oy)
        return need <= usable

    greedy, best = tiling.fuse_maps(layer, plat), tiling.optimal_groups(layer, plat)
    for groups in (greedy, best):
        assert all(len(g) == 1 or fits(g) for g in groups)
    g_loads, b_loads = (tiling.fmap_traffic(layer, g).loads for g in (greedy, best))
    assert b_loads == brute_force_loads(layer, fits) <= g_loads
    assert g_loads <= sum(len(row) for row in layer.connections)


# --- hand examples ------------------------------------------------------------------------------

def test_greedy_by_hand() -> None:
    # seed p0 (4 maps, lowest index among the largest); p1 shares 3 -> merged first; p3 then
    # adds map 5 (union 5 <= 5); p2 would make 6 maps -> alone.  Loads 5 + 4 vs 4+3+4+3.
    layer = sparse_layer([[0, 1, 2, 3], [0, 1, 2], [2, 3, 4, 5], [0, 1, 5]], kc=6)
    assert tiling.fuse_maps(layer, 5) == ((0, 1, 3), (2,))
    assert tiling.fmap_traffic(layer, tiling.fuse_maps(layer, 5)).loads == 9
    # minimum difference: both candidates share {0, 1}; {0, 1, 2} adds one map, {0, 1, 3, 4} two
    layer = sparse_layer([[0, 1, 5, 6, 7], [0, 1, 3, 4], [0, 1, 2]], kc=8)
    assert tiling.fuse_maps(layer, 6) == ((0, 2), (1,))


def test_traffic_by_hand() -> None:
    layer = sparse_layer([[0], [0, 1], [2]], kc=3, ox=3, oy=2, k=2, n=2)  # Ix 4, Iy 3
    t = tiling.fmap_traffic(layer, [(0, 1), (2,)])
    assert (t.loads, t.inputs, t.weights, t.outputs) == (3, 3 * 4 * 3 * 2, 4 * 4, 3 * 3 * 2 * 2)
    assert t.total == t.inputs + t.weights + t.outputs
    with pytest.raises(ValueError):
        tiling.fmap_traffic(layer, [(0, 1)])
    with pytest.raises(ValueError):
        tiling.fmap_traffic(layer, [(0, 1), (1, 2)])


# --- the two detectors of seed 003 at the nve preset ------------------------------------------

DETECTORS = ("face_detector", "speed_sign_detector")


@pytest.mark.parametrize("net", DETECTORS)
def test_executor_on_detector_tables(net: str) -> None:
    for layer in layers.load_network(net).tiled_layers():
        small = shrunk(layer)
        check_executor(small, tiling.fuse_maps(small, 3), 3)
        check_executor(small, tiling.fuse_maps(small, NVE), None)


def test_nve_whole_maps_never_fit() -> None:
    """Brief's literal rule: one input plus one output map of any layer exceeds 64 KB."""
    for net in DETECTORS:
        for layer in layers.load_network(net).tiled_layers():
            assert layer.Ix * layer.Iy + layer.Ox * layer.Oy > NVE_BYTES
            assert sorted(tiling.fuse_maps(layer, NVE)) == list(tiling.unfused_groups(layer))


@pytest.mark.parametrize("band_rows", [None, 1, 4, 8, 16])
def test_no_reduction_without_shared_inputs(band_rows: int | None) -> None:
    for net in DETECTORS:
        table = tiling.fusion_table(layers.load_network(net), NVE, band_rows)
        for layer, row in zip(layers.load_network(net).tiled_layers(), table.itertuples(),
                              strict=True):
            rows = [set(r) for r in layer.connections]
            disjoint = all(not (a & b) for i, a in enumerate(rows) for b in rows[i + 1:])
            if disjoint:  # face L3 (map i reads map i only) and both L4 (one output map)
                assert row.reduction_pct == 0 and row.in_fused == row.in_unfused
            assert row.in_optimum <= row.in_fused <= row.in_unfused


def test_nve_line_buffer_reaches_one_load_per_map() -> None:
    """band_rows=1: each layer's whole table fits one 64 KB working set (checked by hand), so
    every used input map is loaded once; reduction = 1 - |union of inputs| / sum |inputs|."""
    expected = {}
    for net in DETECTORS:
        for layer in layers.load_network(net).tiled_layers():
            rows = [set(r) for r in layer.connections]
            union = set().union(*rows)
            in_b = layer.Ix * min(layer.Iy, layer.Ky)   # Ky input rows of each map
            assert len(union) * in_b + layer.Oc * layer.Ox <= NVE_BYTES
            expected[net, layer.name] = 100 * (1 - len(union) / sum(len(r) for r in rows))
        table = tiling.fusion_table(layers.load_network(net), NVE, band_rows=1)
        for row in table.itertuples():
            assert row.reduction_pct == pytest.approx(expected[net, row.layer])
            assert row.in_optimum == row.in_fused
    assert expected["face_detector", "L1"] == 75 and expected["face_detector", "L2"] == 80
    assert expected["speed_sign_detector", "L2"] == 90
    assert max(expected.values()) == expected["speed_sign_detector", "L3"] == 97.5


def test_nve_sixteen_row_bands_by_hand() -> None:
    """band_rows=16 (the NVE vector height) with byte counts worked out by hand."""
    face = tiling.fusion_table(layers.load_network("face_detector"), NVE, 16).set_index("layer")
    speed = tiling.fusion_table(layers.load_network("speed_sign_detector"), NVE,
                                16).set_index("layer")
    # L1: input band 1280 x 36 = 46080 B, output band 638 x 16 = 10208 B; two outputs: 66496
    assert face.loc["L1", "reduction_pct"] == 0
    # speed L2: band 638 x 36 = 22968 B, three maps 68904 > 65536, every program reads >= 3
    assert speed.loc["L2", "reduction_pct"] == 0
    # face L2: 636 x 34 = 21624 B per input, 317 x 16 = 5072 B per output: <= 2 inputs and
    # <= 4 outputs per group (2*21624 + 4*5072 = 63536); the six pair programs need six groups
    # of 2 maps, whose free slots take the 8 single-map programs: 12 loads vs 20.
    assert face.loc["L2", "in_fused"] == face.loc["L2", "in_optimum"] == 12 * 636 * 356
    assert face.loc["L2", "reduction_pct"] == pytest.approx(40)
    # speed L3: 316 x 20 = 6320 B per input, 312 x 16 = 4992 B per output; 8 maps + 3 outputs
    # = 65536 exactly; 16 maps never fit: 2 x ceil(40 / 3) = 28 groups of 8 maps.
    assert speed.loc["L3", "groups"] == 28
    assert speed.loc["L3", "reduction_pct"] == pytest.approx(100 * (1 - 28 * 8 / 640))  # 65 %


def test_print_nve_tables() -> None:
    import pandas as pd

    with pd.option_context("display.width", 160, "display.float_format", "{:.1f}".format):
        for rows in (None, 1, 16):
            for net in DETECTORS:
                table = tiling.fusion_table(layers.load_network(net), NVE, rows)
                print(f"\n{net}, nve 64 KB, band_rows={rows}\n{table.to_string(index=False)}")
                assert list(table.columns) == ["layer", "maps", "groups", "in_unfused",
                                               "in_fused", "in_optimum", "reduction_pct",
                                               "total_reduction_pct"]

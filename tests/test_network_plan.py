"""Whole-network plans: every layer costed, fusion exact and sound, the replay equals the model."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import explore, layers, platforms
from workbench.errors import WorkbenchError
from workbench.explore.network import network_plan
from workbench.explore.plan_trace import trace_plan
from workbench.layers.network import Network
from workbench.layers.spec import ActivationLayer, ConvLayer, PoolLayer, conv_from_input


def _total(df, objective):
    col = {"cycles": "cycles", "energy": "energy_pj", "accesses": "ext_accesses",
           "edp": "edp"}[objective]
    return float(df[col].sum())


@pytest.mark.parametrize("net_name,plat_name", [("lenet5", "idsp"), ("cifar10_quick", "shave"),
                                                ("alexnet_oxford102", "idsp")])
def test_replay_equals_the_plan(net_name, plat_name):
    net = layers.load_network(net_name)
    plat = platforms.load_platform(plat_name)
    plan = network_plan(net, plat)
    replay = trace_plan(net, plat, plan)
    assert replay["ext_accesses"].tolist() == plan["ext_accesses"].tolist()
    assert (replay["local_bytes"] <= plat.local_mem_bytes).all()
    assert set(plan["kind"]) >= {"conv", "pool", "activation"}
    assert (plan.loc[plan["kind"] == "pool", "cycles"] > 0).all()  # non-conv layers cost


def test_one_core_without_fusion_is_todays_model():
    net = layers.load_network("lenet5", batch=2)
    plat = platforms.load_platform("idsp")
    plan = network_plan(net, plat, fusion="off")
    tiled = plan[plan["kind"].isin(["conv", "fc"])].reset_index(drop=True)
    ref = explore.explore_network(net, plat)
    assert np.array_equal(tiled["cycles"].to_numpy(), ref["cycles"].to_numpy())
    assert np.array_equal(tiled["energy_pj"].to_numpy(), ref["energy_pj"].to_numpy())
    assert not plan["fused_in"].any() and not plan["fused_out"].any() and not plan["folded"].any()


def _chain(draw_sizes):
    """conv -> relu -> pool -> conv -> relu -> fc, sizes from the test's draws."""
    c, m1, m2, hw, out = draw_sizes
    conv1 = conv_from_input("conv1", (c, hw, hw), m1, (3, 3), (1, 1), (1, 1))
    relu1 = ActivationLayer("relu1", m1, hw, hw)
    pool1 = PoolLayer("pool1", m1, hw, hw, 2, 2, 2, 2)
    conv2 = conv_from_input("conv2", pool1.out_shape, m2, (3, 3), (1, 1), (1, 1))
    relu2 = ActivationLayer("relu2", m2, conv2.Oy, conv2.Ox)
    fc = ConvLayer.fc("fc", m2 * conv2.Oy * conv2.Ox, out)
    return Network("chain", (conv1, relu1, pool1, conv2, relu2, fc))


@settings(max_examples=examples(12), deadline=None)
@given(sizes=st.tuples(st.integers(1, 3), st.integers(2, 6), st.integers(2, 6),
                       st.sampled_from([4, 6, 8]), st.integers(2, 10)),
       memory=st.sampled_from([2048, 4096, 16384]), n_cores=st.integers(1, 3),
       objective=st.sampled_from(["cycles", "energy", "accesses", "edp"]))
def test_fusion_search_equals_every_forced_choice(sizes, memory, n_cores, objective):
    """The automatic plan is the best of the plans with every boundary forced or off, and
    every plan replays exactly within memory."""
    net = _chain(sizes)
    plat = platforms.load_platform("idsp", local_mem_bytes=memory, cores=n_cores,
                                   register_file_bytes=64)
    try:
        auto = network_plan(net, plat, objective)
    except WorkbenchError:
        return  # nothing fits this memory at all
    assert trace_plan(net, plat, auto)["ext_accesses"].tolist() == \
        auto["ext_accesses"].tolist()
    names = [layer.name for layer in net][:-1]
    best = None
    for modes in itertools.product(["off", "force"], repeat=len(names)):
        try:
            plan = network_plan(net, plat, objective, dict(zip(names, modes, strict=True)))
        except WorkbenchError:
            continue
        replay = trace_plan(net, plat, plan)          # raises if memory is overrun
        assert replay["ext_accesses"].tolist() == plan["ext_accesses"].tolist()
        value = _total(plan, objective)
        best = value if best is None else min(best, value)
    assert _total(auto, objective) == pytest.approx(best, rel=1e-12)


def test_fusion_saves_traffic_only_where_it_fits():
    net = layers.load_network("lenet5")
    big = network_plan(net, platforms.load_platform("idsp"), "accesses", compare_unfused=True)
    assert big["fused_out"].any()
    assert big["ext_accesses"].sum() < big.attrs["unfused_ext_accesses"]
    small = platforms.load_platform("idsp", local_mem_bytes=4096)
    tight = network_plan(net, small, "accesses")
    # conv1's 32x28x28 output (50 KB at 2 B) cannot be kept in 4 KB
    assert not tight.set_index("layer").loc["conv1", "fused_out"]
    assert (trace_plan(net, small, tight)["local_bytes"] <= 4096).all()


def test_fusion_modes_and_errors():
    net = layers.load_network("lenet5")
    plat = platforms.load_platform("idsp", local_mem_bytes=8192)
    with pytest.raises(WorkbenchError, match="fusion mode of layer 'conv1' must be one of"):
        network_plan(net, plat, fusion={"conv1": "maybe"})
    with pytest.raises(WorkbenchError, match="has no layer"):
        network_plan(net, plat, fusion={"nope": "off"})
    with pytest.raises(WorkbenchError, match="'prob': fusion forced, but it is the last layer"):
        network_plan(net, plat, fusion={"prob": "force"})
    forced = network_plan(net, platforms.load_platform("idsp"), fusion={"conv2": "force"})
    row = forced.set_index("layer").loc["conv2"]
    assert row["fused_out"] or forced.set_index("layer").loc["relu2", "folded"]
    off = network_plan(net, platforms.load_platform("idsp"), fusion={"conv1": "off"})
    first = off.set_index("layer")
    assert not first.loc["conv1", "fused_out"] and not first.loc["relu1", "folded"]


def test_network_roofline_shows_every_layer_with_traffic():
    from workbench import viz

    net = layers.load_network("lenet5")
    plat = platforms.load_platform("shave")
    plan = network_plan(net, plat)
    fig = viz.network_roofline(plan, plat)
    points = next(r for r in fig.renderers if "layer" in r.data_source.data).data_source.data
    moving = plan[plan["ext_accesses"] > 0]
    assert points["layer"] == moving["layer"].tolist()
    assert set(points["bound"]) <= {"compute", "I/O"}
    assert {"pool", "conv", "fc"} <= set(points["kind"])


def test_pool_folded_into_its_conv_by_hand():
    """Seed 003 §2.1.2: a 3x3 conv and a 2x2 pool computed together; 8x8 output, 2 maps."""
    from workbench.explore import pool_fold

    conv = conv_from_input("conv", (1, 10, 10), 2, (3, 3), (1, 1), (0, 0))   # 2 x 8 x 8
    pool = PoolLayer("pool", 2, 8, 8, 2, 2, 2, 2)
    assert pool_fold.foldable(conv, pool)
    assert not pool_fold.foldable(conv, PoolLayer("p3", 2, 8, 8, 3, 3, 2, 2))  # overlapping
    plat = platforms.load_platform("idsp")
    row, pooled = pool_fold.best_folded(conv, pool, plat, "accesses", False, False,
                                        ["inter_kc"], True)
    # whole layer in one tile: input 100, weights 18, and 2x4x4 = 32 pooled outputs (not 128)
    assert (row["in_accesses"], row["w_accesses"], row["out_accesses"]) == (100, 18, 32)
    assert pooled["ext_accesses"] == 0 and pooled["cycles"] == pool.ops / plat.simd_lanes


@settings(max_examples=examples(15), deadline=None)
@given(ox=st.sampled_from([2, 4, 6]), oy=st.sampled_from([2, 4]), oc=st.integers(1, 3),
       kc=st.integers(1, 3), memory=st.sampled_from([512, 2048, 1 << 20]),
       kin=st.booleans(), kout=st.booleans(),
       objective=st.sampled_from(["cycles", "energy", "accesses", "edp"]))
def test_pool_fold_search_equals_every_aligned_tile(ox, oy, oc, kc, memory, kin, kout,
                                                    objective):
    from workbench import perf, tiling
    from workbench.explore import pool_fold

    conv = ConvLayer("c", Ox=ox, Oy=oy, Oc=oc, Kx=3, Ky=3, Kc=kc)
    pool = PoolLayer("p", oc, ox, oy, 2, 2, 2, 2)
    plat = platforms.load_platform("idsp", local_mem_bytes=memory, register_file_bytes=16)
    got = pool_fold.best_folded(conv, pool, plat, objective, kin, kout, tiling.SCHEDULES, True)
    kept = (kin * conv.Kc * conv.Iy * conv.Ix + kout * oc * (ox // 2) * (oy // 2)) * 2
    best = None
    for schedule in tiling.SCHEDULES:
        for tiles in tiling.gen_tiles(conv, reduced=False):
            tiles = tiles[(tiles[:, 0] % 2 == 0) & (tiles[:, 1] % 2 == 0)]
            c = tiling.counts_array(conv, tiles, schedule)
            fp = (c["bin"] + c["bw"] + c["bout"]) * 4
            tiles, c = tiles[fp + kept <= memory], {k: v[fp + kept <= memory]
                                                    for k, v in c.items()}
            if not len(tiles):
                continue
            final = (-(-ox // tiles[:, 0])) * (-(-oy // tiles[:, 1])) * \
                (-(-oc // tiles[:, 2])) * c["bout"]
            ext = (not kin) * c["in_accesses"] + c["w_accesses"] + \
                (not kout) * final // 4 + c["out_accesses"] - final
            p = perf.price(plat, perf.CountVector.of(
                c["bin"] + c["bw"] + c["bout"], ext, c["dma_transfers"], c["n_tiles"],
                tiles.prod(1) * 9), perf.layer_local_accesses(conv, plat, True))
            cyc = p["cycles"] + pool.ops / plat.simd_lanes
            en = p["energy_pj"] + pool.ops / plat.simd_lanes * plat.core_pj_per_cycle
            value = {"cycles": cyc, "energy": en, "accesses": ext, "edp": cyc * en}[objective]
            best = value.min() if best is None else min(best, value.min())
    if best is None:
        assert got is None
        return
    row, pooled = got
    total = {"cycles": row["cycles"] + pooled["cycles"],
             "energy": row["energy_pj"] + pooled["energy_pj"],
             "accesses": row["ext_accesses"],
             "edp": (row["cycles"] + pooled["cycles"]) * (row["energy_pj"]
                                                         + pooled["energy_pj"])}[objective]
    assert total == pytest.approx(float(best), rel=1e-12)


def test_a_map_another_layer_also_reads_is_never_kept_on_chip():
    """conv1 -> relu1 -> conv2 -> add(relu1, conv2): relu1's output also feeds the add, so
    it must reach external memory and the relu1 | conv2 boundary cannot fuse; as a chain
    (no graph recorded) the same layers may fuse there."""
    from workbench.layers.spec import EltwiseLayer

    conv1 = ConvLayer("conv1", Ox=16, Oy=16, Oc=8, Kx=3, Ky=3, Kc=8, Px=1, Py=1)
    relu1 = ActivationLayer("relu1", C=8, H=16, W=16)
    conv2 = ConvLayer("conv2", Ox=16, Oy=16, Oc=8, Kx=3, Ky=3, Kc=8, Px=1, Py=1)
    add = EltwiseLayer("add", C=8, H=16, W=16)
    graph = {"conv1": ("",), "relu1": ("conv1",), "conv2": ("relu1",),
             "add": ("relu1", "conv2")}
    residual = Network("residual", [conv1, relu1, conv2, add], inputs=graph)
    chain = Network("chain", [conv1, relu1, conv2, add])
    plat = platforms.load_platform("idsp", local_mem_bytes=64 * 1024)
    assert not explore.network.fusable_at(residual, 1)
    assert explore.network.fusable_at(chain, 1) and explore.network.fusable_at(residual, 0)
    plan = network_plan(residual, plat, "accesses", "auto").set_index("layer")
    assert not plan.loc["relu1", "fused_out"] and not plan.loc["conv2", "fused_in"]
    with pytest.raises(WorkbenchError, match="'conv2' does not read exactly its output"):
        network_plan(residual, plat, "accesses", {"relu1": "force"})
    forced = network_plan(chain, plat, "accesses", {"relu1": "force"}).set_index("layer")
    assert forced.loc["relu1", "fused_out"]


def test_roles_and_dma_setup_share_of_mobilenet_v2():
    """Each conv of MobileNet-v2 has the role its shape gives it (counted here from the
    torchvision architecture: the 3×3 stem; 17 inverted-residual blocks, each a depthwise
    3×3 and a pointwise projection, all but the first with a pointwise expansion too: 17
    depthwise, 16 + 17 pointwise; the last 1×1 conv to 1280 maps: 34 pointwise), and the
    DMA-setup share is the setup cycles over the layer's cycles."""
    net = layers.load_network("mobilenet_v2")
    plan = network_plan(net, platforms.load_platform("idsp"))
    roles = plan[plan["kind"] == "conv"]["role"].value_counts().to_dict()
    assert roles == {"pointwise": 34, "depthwise": 17, "conv": 1}
    share = plan["cycles_dma_setup"] / plan["cycles"]
    assert np.allclose(plan["dma_setup_share"], share) and share.between(0, 1).all()


def test_report_findings_tell_the_mobilenet_story():
    """The summary names the depthwise vs pointwise split and where DMA setup dominates (the
    layers counted here from the plan's own cycle parts)."""
    from workbench import report

    net = layers.load_network("mobilenet_v2")
    plat = platforms.load_platform("idsp", dma_setup_cycles=2000, local_mem_bytes=16 * 1024)
    plan = network_plan(net, plat)
    found = report.key_findings(plan, explore.network_totals(plan, plat), plat)
    assert found["depthwise vs pointwise"].startswith("17 depthwise layers take ")
    assert "; 34 pointwise layers take " in found["depthwise vs pointwise"]
    heavy = int(((plan["cycles_dma_setup"] >= 0.5 * plan["cycles"])
                 & (plan["cycles"] >= 0.01 * plan["cycles"].sum())).sum())
    assert heavy > 0 and found["DMA setup"].startswith(f"dominates in {heavy} layer(s): ")
    lenet = network_plan(layers.load_network("lenet5"), platforms.load_platform("idsp"))
    lenet_found = report.key_findings(lenet, explore.network_totals(
        lenet, platforms.load_platform("idsp")), platforms.load_platform("idsp"))
    assert "depthwise vs pointwise" not in lenet_found

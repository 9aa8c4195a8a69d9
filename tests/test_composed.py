"""Levels × cores × DMA × fusion composed (`explore.composed`): one plan on a platform with
memory levels, checked against the literal replay of every core's share (`hierarchy.executor`)
and against today's `workbench hierarchy` answers stored before the engine was composed."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from workbench import layers, platforms
from workbench.explore import composed, network_plan
from workbench.explore.level_search import weightings
from workbench.explore.levels_replay import replay_counts, replay_table
from workbench.hierarchy.executor import execute
from workbench.layers.spec import ConvLayer
from workbench.memo import Caches

CASES = Path(__file__).resolve().parent / "cases"

# a small 3-level, 4-core platform that prices everything the composed model adds
DOC = {
    "name": "tiny4", "clock_mhz": 100,
    "memory": {"elem_bytes": 1, "double_buffer": True, "levels": [
        {"name": "DRAM", "capacity": None, "access_bits": 8, "energy_pj": 50, "bandwidth": 2},
        {"name": "L1", "capacity": 2048, "access_bits": 8, "energy_pj": 3, "bandwidth": 4},
        {"name": "RF", "capacity": 64, "access_bits": 8, "energy_pj": 0.5, "bandwidth": 8}]},
    "datapath": {"macs_per_cycle": 2, "register_file_bytes": 64, "in_bits": 8, "w_bits": 8,
                 "acc_bits": 32},
    "dma": {"setup_cycles": 20, "channels": 2, "broadcast": False},
    "cluster": {"cores": 4, "static_pj_per_cycle": 0.25},
    "energy": {"mac_pj": 0.2},
}


def tiny(**changes) -> platforms.Platform:
    doc = copy.deepcopy(DOC)
    for path, value in changes.items():
        part, key = path.split("__")
        doc[part][key] = value
    return platforms.platform_from_dict(doc, "test")


def replay(m: composed.LevelsMapping) -> dict:
    """Counts of the mapping from the executor alone (`levels_replay`), with the bits each
    level moves at this platform's widths (8-bit data, 32-bit partial sums)."""
    got = replay_counts(m)
    got["bits"] = [8 * (a - p) + 32 * p
                   for a, p in zip(got["accesses"], got["partial_accesses"], strict=True)]
    return got


LAYER = ConvLayer("c", Ox=6, Oy=6, Oc=8, Kx=3, Ky=3, Kc=4)


@pytest.mark.parametrize("kept", [(False, False), (True, False), (False, True)])
def test_every_option_replays_to_its_counts(kept) -> None:
    """Every (split, cores, weighting) mapping of a layer: its row's accesses per level, bus
    traffic by array and DMA transfers equal the executor's replay of each core's share."""
    plat = tiny()
    found = composed.options(LAYER, plat, kept, "edp", Caches())  # every option, unpruned
    assert len(found) > 4 if not any(kept) else found
    for m, row in found:
        got = replay(m)
        names = [lvl.name for lvl in m.hierarchy.levels]
        assert [row[f"accesses_{n}"] for n in names] == got["accesses"], (m.split, m.cores)
        assert replay_table(m)["equal"].all()
        assert (row["in_accesses"], row["w_accesses"], row["out_accesses"]) == \
            (got["bus"]["I"], got["bus"]["W"], got["bus"]["O"])
        assert row["ext_accesses"] == sum(got["bus"].values())
        assert row["dma_transfers"] == got["dma"]
        assert sum(s.cores for s in m.shares) == m.cores


def test_cycles_and_energy_follow_from_the_replayed_counts() -> None:
    """Cycles: max(compute + queued setups, each link, the shared bus); energy: the levels'
    and MACs' of every core, setups, static power over each core's time: from replay counts
    and the platform's figures, written out here by hand."""
    plat = tiny()
    for m, row in composed.options(LAYER, plat, (False, False), "energy", Caches()):
        got = replay(m)
        k = m.cores
        steps = [execute(s.layer, s.blocking, m.hierarchy.datapath) for s in m.shares]
        macs = [s.layer.macs for s in m.shares]
        compute = [mc / 2 for mc in macs]  # no unroll: MACs over 2 per cycle
        assert all(c[("O", 3)]["steps"] == mc for c, mc in zip(steps, macs, strict=True))
        setups = [s.dma_transfers * 20 * max(1, k / 2) for s in m.shares]
        bus = sum(got["bus"].values()) / 2
        core = [c + st for c, st in zip(compute, setups, strict=True)]
        cycles = max(max(core), bus, *[lk for s in m.shares for lk in _links(s, m)])
        assert row["cycles"] == pytest.approx(cycles, rel=1e-12)
        level_pj = [50, 3, 0.5]
        # every level's access is 8 bits wide: a 32-bit partial sum takes four
        energy = sum(b / 8 * pj for b, pj in zip(got["bits"], level_pj, strict=True))
        energy += sum(LAYER_MACS(s) * s.cores * 0.2 for s in m.shares)
        setup_pj = sum(s.cores * st for s, st in zip(m.shares, setups, strict=True)) \
            * plat.core_pj_per_cycle
        busy = [max(c, *_links(s, m), bus) for c, s in zip(core, m.shares, strict=True)]
        static = sum(s.cores * b for s, b in zip(m.shares, busy, strict=True)) * 0.25
        assert row["energy_pj"] == pytest.approx(energy + setup_pj + static, rel=1e-12)


def test_single_buffering_serializes_the_bus_and_keeps_the_whole_level() -> None:
    """Single-buffered, a core computes and then waits for its transfers: cycles are
    max(compute + setups + bus, links); double-buffered, the outermost on-chip level holds
    two copies of every buffer, so its buffers (from the executor's live elements) take at
    most half of it."""
    single, double = tiny(memory__double_buffer=False), tiny()
    for m, row in composed.options(LAYER, single, (False, False), "edp", Caches()):
        got = replay(m)
        core = [s.layer.macs / 2 + s.dma_transfers * 20 * max(1, m.cores / 2)
                for s in m.shares]
        bus = sum(got["bus"].values()) / 2
        links = [lk for s in m.shares for lk in _links(s, m)]
        assert row["cycles"] == pytest.approx(max(max(core) + bus, *links), rel=1e-12)
    for m, _ in composed.options(LAYER, double, (False, False), "edp", Caches()):
        assert m.hierarchy.levels[1].capacity_bytes == 1024
        for s in m.shares:
            counts = execute(s.layer, s.blocking, m.hierarchy.datapath)
            widths = {"I": 1, "W": 1, "O": 4}  # 8-bit data, 32-bit partial sums
            live = sum(c["live"] * widths[a] for (a, lvl), c in counts.items() if lvl == 1)
            assert live <= 1024


def LAYER_MACS(share) -> int:  # noqa: N802 (a count, named as in the model)
    return share.layer.macs


def _links(share: composed.ShareMapping, m: composed.LevelsMapping) -> list[float]:
    """Cycles over L1's and RF's inward links of one core, from the executor."""
    counts = execute(share.layer, share.blocking, m.hierarchy.datapath)
    out = {1: 0, 2: 0}
    for array in ("I", "W", "O"):
        chain = sorted(level for a, level in counts if a == array)
        source = 0
        for level in chain:
            c = counts[(array, level)]
            if source in out:
                out[source] += c["moved"] + c["partial_reads"]
            source = level
    return [out[1] / 4, out[2] / 8]


@pytest.mark.parametrize("broadcast", [False, True])
def test_pruned_cycles_choice_is_the_least_of_every_option(broadcast) -> None:
    """`best` for cycles skips splits by `cycles_floor`; it still picks the option every
    option ranks first (cycles, external accesses, footprint, fewer cores), and every floor is
    at most its option's cycles."""
    plat = tiny(dma__broadcast=broadcast)
    for layer in (LAYER, ConvLayer.fc("f", 40, 24),
                  ConvLayer("w", Ox=8, Oy=3, Oc=2, Kx=1, Ky=1, Kc=6)):
        every = composed.options(layer, plat, (False, False), "edp", Caches())
        for m, row in every:
            assert composed.cycles_floor(layer, plat, m.split, m.cores) <= row["cycles"]
        # EDP compares the blockings of the searches cycles does and more, unpruned
        every = [(m, r) for m, r in every if m.weights in weightings("cycles", plat)]
        key = ("cycles", "ext_accesses", "footprint_bytes", "cores")
        want = min(tuple(r[c] for c in key) for _, r in every)
        _, got = composed.best(layer, plat, "cycles", caches=Caches())
        assert tuple(got[c] for c in key) == want


def test_broadcast_sends_the_shared_array_once_per_share() -> None:
    plain, cast = tiny(), tiny(dma__broadcast=True)
    for split, shared in (("oc", "in_accesses"), ("xy", "w_accesses")):
        m = composed.mapping(LAYER, plain, split, 4, caches=Caches())
        a = composed.price(m, plain)
        b = composed.price(m, cast)
        per_core = [(s.cores, replay(composed.LevelsMapping(
            m.layer, split, 1, (composed.ShareMapping(1, s.layer, s.starts, s.blocking,
                                                      s.transfers, s.dma_transfers),),
            m.hierarchy))["bus"]) for s in m.shares]
        array = "I" if shared == "in_accesses" else "W"
        assert b[shared] == sum(bus[array] for _, bus in per_core)
        assert a[shared] == sum(c * bus[array] for c, bus in per_core)
        assert b["energy_external_pj"] < a["energy_external_pj"]


def test_one_core_no_dma_least_energy_is_todays_hierarchy_plan() -> None:
    """On seed001_3level (one core, no DMA cost) with least energy and no fusion, explore's
    conv/fc rows are the blockings, cycles and energies `workbench hierarchy` printed before
    the engine was composed (stored in tests/cases)."""
    stored = json.loads((CASES / "hierarchy-lenet5-seed001_3level.json").read_text())["given"]
    net = layers.load_network("lenet5")
    plan = network_plan(net, platforms.load_platform("seed001_3level"), "energy", "off")
    rows = plan[plan["schedule"] == "levels"]
    assert list(rows["layer"]) == list(stored["layer_cycles"])
    assert rows["energy_pj"].sum() == pytest.approx(stored["energy_pj"], rel=1e-12)
    assert rows["energy_compute_pj"].sum() == pytest.approx(stored["mac_energy_pj"], rel=1e-12)
    for (_, row), tiles in zip(rows.iterrows(), stored["tiles"], strict=True):
        # seed001_3level is single-buffered: the bus and compute take turns, so the cycles
        # are at least the hierarchy's, which overlap them
        assert row["cycles"] >= stored["layer_cycles"][row["layer"]][0]
        assert row["tiles"] == " | ".join("×".join(map(str, t)) for t in tiles)


def test_explore_prints_one_plan_on_a_platform_with_levels(tmp_path, capsys) -> None:
    from workbench.cli.main import main

    assert main(["explore", "lenet5", "--platform", "seed001_3level", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "hierarchy" not in doc
    conv = [r for r in doc["rows"] if r["schedule"] == "levels"]
    assert [r["layer"] for r in conv] == ["conv1", "conv2", "fc3", "fc4"]
    assert all(r["energy_pj_SRAM"] >= 0 and r["accesses_RF"] > 0 for r in conv)
    assert main(["explore", "lenet5", "--platform", "seed001_3level"]) == 0
    text = capsys.readouterr().out
    assert "memory hierarchy" not in text and "hierarchy total" not in text
    assert "levels DRAM | SRAM 256 KB | RF 1 KB" in text
    assert "conv/fc layers by level: energy DRAM" in text


@settings(max_examples=12, deadline=None)
@given(ox=st.integers(2, 6), oc=st.integers(1, 6), kc=st.integers(1, 4),
       k=st.integers(1, 4), split=st.sampled_from(["oc", "xy"]))
def test_any_split_replays_to_its_counts(ox, oc, kc, k, split) -> None:
    layer = ConvLayer("r", Ox=ox, Oy=ox, Oc=oc, Kx=3, Ky=3, Kc=kc)
    plat = tiny()
    extent = oc if split == "oc" else ox
    m = composed.mapping(layer, plat, split, min(k, extent), caches=Caches())
    assert m is not None
    row = composed.price(m, plat)
    got = replay(m)
    assert [row[f"accesses_{n}"] for n in ("DRAM", "L1", "RF")] == got["accesses"]
    assert row["dma_transfers"] == got["dma"]


def test_a_preset_with_levels_and_cores_plans_every_layer() -> None:
    """shave_cmx: 12 cores, DDR + CMX + VRF, DMA setups: one plan, several cores used."""
    plat = platforms.load_platform("shave_cmx")
    plan = network_plan(layers.load_network("lenet5"), plat, "cycles")
    conv = plan[plan["schedule"] == "levels"]
    assert len(conv) == 4 and conv["cores"].max() > 1
    assert (conv["dma_transfers"] > 0).all() and (conv["cycles_dma_setup"] > 0).any()


def test_the_platform_file_parses(tmp_path) -> None:
    path = tmp_path / "tiny4.yaml"
    path.write_text(yaml.safe_dump(DOC))
    assert platforms.load_platform(str(path)).has_levels


NET = """name: small
layers:
  - {name: c1, type: conv, input: [3, 10, 10], maps: 8, kernel: 3, stride: 1, pad: 1}
  - {name: r1, type: relu}
  - {name: c2, type: conv, maps: 6, kernel: 3, stride: 1, pad: 0}
  - {name: f1, type: fc, outputs: 10}
"""


@pytest.mark.parametrize("fusion", ["auto", "force"])
def test_trace_plan_replays_a_plan_on_levels(tmp_path, fusion) -> None:
    """Every conv/fc row of a whole-network plan on levels and cores, replayed core by core by
    the executor (`explore.trace_plan`): the bus elements it counts are the plan's."""
    from workbench.explore import trace_plan

    path = tmp_path / "small.yaml"
    path.write_text(NET)
    net = layers.load_network(str(path))
    plat = tiny()
    plan = network_plan(net, plat, "cycles", fusion, caches=Caches())
    traced = trace_plan(net, plat, plan)
    rows = plan["schedule"] == "levels"
    assert rows.sum() == 3
    assert (fusion == "force") == bool(plan["fused_out"].any())  # kept maps replayed too
    assert list(traced.loc[rows, "ext_accesses"]) == list(plan.loc[rows, "ext_accesses"])
    assert (traced["local_bytes"] <= 2048).all()


def test_the_hierarchy_command_says_what_its_blockings_leave_out(capsys) -> None:
    from workbench.cli.main import main

    assert main(["hierarchy", "lenet5", "--platform", "shave_cmx"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("its 12 cores, DMA setups and double buffering are priced with them in "
            "`workbench explore lenet5 --platform shave_cmx --objective energy`") in text
    assert main(["hierarchy", "lenet5", "--platform", "seed001_3level"]) == 0
    assert "are priced with them" not in capsys.readouterr().out


def test_a_double_buffered_banked_level_is_halved_and_priced_whole(tmp_path) -> None:
    """Double-buffered, each bank of a banked level holds half its bytes for buffers, and an
    energy derived from size is still that of each whole bank (seed 001 table 3 by hand)."""
    from workbench.hierarchy.codesign import table3_energy_pj

    doc = copy.deepcopy(DOC)
    doc["memory"]["levels"][1] = {"name": "L1", "capacity": {"I+O": 1024, "W": 2048},
                                  "access_bits": 64, "energy_pj": None, "bandwidth": 4}
    path = tmp_path / "banked.yaml"
    path.write_text(yaml.safe_dump(doc))
    plat = platforms.load_platform(str(path))
    m = composed.mapping(LAYER, plat, caches=Caches())
    level = m.hierarchy.levels[1]
    assert level.capacity_bytes.banks == (("IO", 512), ("W", 1024))
    for array, whole in (("I", 1024), ("O", 1024), ("W", 2048)):
        assert level.access_pj(array, table3_energy_pj) == table3_energy_pj(whole, 64)
    _, row = composed.best(LAYER, plat, "energy", caches=Caches())
    assert row["energy_pj"] > 0


BANDED_NET = """name: banded
layers:
  - {name: c1, type: conv, input: [3, 24, 24], maps: 16, kernel: 3, stride: 1, pad: 1}
  - {name: r1, type: relu}
  - {name: c2, type: conv, maps: 6, kernel: 3, stride: 1, pad: 0}
"""


def test_a_plan_keeps_maps_in_bands_and_replays(tmp_path) -> None:
    """A map too big for one core's 4 KB but whose bands fit: with least external accesses
    the conv → relu → conv boundary is kept in bands across the 4 cores (fused_across "xy"),
    never on one core; the trace (executor per core, halo rows) counts the plan's traffic,
    and every core's buffers and band fit its memory."""
    from workbench.explore import trace_plan

    path = tmp_path / "banded.yaml"
    path.write_text(BANDED_NET)
    net = layers.load_network(str(path))
    doc = copy.deepcopy(DOC)
    doc["memory"]["levels"][1]["capacity"] = 4096
    plat = platforms.platform_from_dict(doc, "test")
    plan = network_plan(net, plat, "accesses", caches=Caches())
    across = plan[plan["fused_across"] == "xy"]
    assert list(across["layer"]) == ["c1", "r1", "c2"] and (across["cores"] == 4).all()
    traced = trace_plan(net, plat, plan)
    rows = plan["schedule"] == "levels"
    assert list(traced.loc[rows, "ext_accesses"]) == list(plan.loc[rows, "ext_accesses"])
    assert (traced["local_bytes"] <= 4096).all()
    row = plan.set_index("layer").loc["c2"].to_dict()
    m = composed.planned_mapping(net["c2"], plat, row)
    assert m.kept == ("xy", False) and replay_table(m)["equal"].all()
    assert sum(e for s in m.shares for e, _ in s.halo) > 0
    unfused = network_plan(net, plat, "accesses", "off", caches=Caches())
    assert plan["ext_accesses"].sum() < unfused["ext_accesses"].sum()



@settings(max_examples=80, deadline=None)
@given(kinds=st.tuples(st.sampled_from(["xy", "oc"]), st.sampled_from(["xy", "oc"])),
       maps=st.integers(1, 8), next_maps=st.integers(1, 8), oy=st.integers(1, 12),
       ky=st.integers(1, 5), sy=st.integers(1, 3), py=st.integers(0, 2), k=st.integers(2, 6))
def test_exchange_is_what_the_other_cores_hold(kinds, maps, next_maps, oy, ky, sy, py,
                                               k) -> None:
    """`bands.exchange` against sets of (map, row) elements: the producer split by its kind
    over k cores (`tiling.partition.shares`) leaves each core its part of the map; each
    core of the consumer, split by its kind, reads every map of the rows its output rows
    read (padding excluded; "xy") or the whole map ("oc"). What it reads and does not hold
    comes from the cores holding it, one transfer per such core; what it holds and does not
    read it keeps for the others."""
    from workbench.explore import bands
    from workbench.tiling.partition import shares

    producer_kind, consumer_kind = kinds
    py = min(py, ky - 1)
    consumer = ConvLayer("c", Ox=3, Oy=oy, Oc=next_maps, Kx=1, Ky=ky, Kc=maps, Sy=sy, Py=py)
    producer = ConvLayer("p", Ox=3, Oy=consumer.Iy, Oc=maps, Kx=1, Ky=1, Kc=2)
    extents = {"xy": (producer.Oy, consumer.Oy), "oc": (maps, next_maps)}
    k = min(k, extents[producer_kind][0], extents[consumer_kind][1])
    assume(k >= 2)
    every = {(m, y) for m in range(maps) for y in range(producer.Oy)}
    held = []  # per core, in band order: the (map, row) elements it computed
    for share in shares(producer, producer_kind, k):
        size = share.layer.Oy if producer_kind == "xy" else share.layer.Oc
        for start in share.starts:
            part = range(start, start + size)
            held.append((start, {(m, y) for m, y in every
                                 if (y if producer_kind == "xy" else m) in part}))
    held = [elements for _, elements in sorted(held)]
    state = bands.state_of(producer_kind, consumer_kind)
    seen = 0
    for share in shares(consumer, consumer_kind, k):
        size = share.layer.Oy if consumer_kind == "xy" else share.layer.Oc
        for start in share.starts:
            if consumer_kind == "xy":
                rows = {y * sy - py + r for y in range(start, start + size) for r in range(ky)}
                read = {(m, y) for m, y in every if y in rows}
            else:
                read = every
            firsts = [band[0] for band in bands.row_bands(extents[consumer_kind][1], k)]
            core = firsts.index(start)
            others = [read & held[c] for c in range(k) if c != core]
            (got,) = bands.exchange(consumer, state, [start], size, k)
            assert got == (sum(map(len, others)) * 3, sum(1 for o in others if o),
                           len(held[core] - read) * 3)
            seen += 1
    assert seen == k


CHANNEL_NET = """name: channel bands
layers:
  - {name: f1, type: fc, input: [96, 1, 1], outputs: 64}
  - {name: r1, type: relu}
  - {name: f2, type: fc, outputs: 48}
  - {name: f3, type: fc, outputs: 8}
"""


def test_a_plan_keeps_maps_in_channel_bands_and_replays(tmp_path) -> None:
    """Fully connected layers, compute-bound (a fast bus, faster on-chip links, no DMA setup
    cost), split by output maps over the 4 cores for least cycles: every boundary is kept in
    map bands across the cores (fused_across "oc"; rows cannot split an fc layer). Each
    core of f2 and f3 gathers the other cores' maps over the bus; the trace (executor per
    core plus the gathered maps) counts the plan's traffic, each core's buffers and maps fit
    its memory, and the executor's replay of f2 equals the plan's counts."""
    from workbench.explore import trace_plan

    path = tmp_path / "channels.yaml"
    path.write_text(CHANNEL_NET)
    net = layers.load_network(str(path))
    doc = copy.deepcopy(DOC)
    for level, bandwidth in zip(doc["memory"]["levels"], (64, 128, 256), strict=True):
        level["bandwidth"] = bandwidth
    doc["dma"]["setup_cycles"] = 0
    plat = platforms.platform_from_dict(doc, "test")
    plan = network_plan(net, plat, "cycles", caches=Caches())
    assert list(plan["fused_across"]) == ["oc"] * 4 and (plan["cores"] == 4).all()
    traced = trace_plan(net, plat, plan)
    rows = plan["schedule"] == "levels"
    assert list(traced.loc[rows, "ext_accesses"]) == list(plan.loc[rows, "ext_accesses"])
    assert (traced["local_bytes"] <= 2048).all()
    for name, gathered in (("f2", (48, 3)), ("f3", (36, 3))):
        m = composed.planned_mapping(net[name], plat, plan.set_index("layer").loc[name]
                                     .to_dict())
        assert m.kept == ("oc", "oc" if name == "f2" else False)
        assert replay_table(m)["equal"].all()
        assert [h for s in m.shares for h in s.halo] == [gathered] * 4
    unfused = network_plan(net, plat, "cycles", "off", caches=Caches())
    assert plan["cycles"].sum() <= unfused["cycles"].sum()
    assert plan["ext_accesses"].sum() < unfused["ext_accesses"].sum()


MIXED_NET = """name: mixed
layers:
  - {name: c1, type: conv, input: [4, 8, 8], maps: 32, kernel: 1, stride: 1, pad: 0}
  - {name: c2, type: conv, maps: 8, kernel: 3, stride: 1, pad: 1}
"""


@pytest.mark.parametrize("capacity, state, gathered", [
    # c1 keeps 8 of the 32 maps per core; c2's core reads every map of its 2 rows and the
    # 3×3 kernel's halo (rows 0-2, 1-4, 3-6, 5-7): 24 maps × 3 or 4 rows × 8 columns
    (2048, "oc>xy", [(576, 3), (768, 3), (768, 3), (576, 3)]),
    # c1 keeps 2 of the 8 rows per core; c2's core reads the whole map: 32 maps × 6 rows × 8
    (4096, "xy>oc", [(1536, 3)] * 4)])
def test_layers_split_differently_keep_their_map_on_chip(tmp_path, capacity, state,
                                                         gathered) -> None:
    """For least energy, c1 and c2 split differently over the 4 cores and keep c1's map on
    chip between them: c1 keeps its band under its split, each core of c2 gathers what it
    reads from the others (the counts above are worked by hand); the trace counts the
    plan's traffic, every core's buffers and maps fit, the executor's replay of c2 equals
    the plan's counts, and the plan spends less energy than with fusion off."""
    from workbench.explore import trace_plan

    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED_NET)
    net = layers.load_network(str(path))
    doc = copy.deepcopy(DOC)
    doc["memory"]["levels"][1]["capacity"] = capacity
    plat = platforms.platform_from_dict(doc, "test")
    plan = network_plan(net, plat, "energy", caches=Caches())
    assert list(plan["fused_across"]) == [state, state]
    assert list(plan["split"]) == list(state.split(">")) and (plan["cores"] == 4).all()
    traced = trace_plan(net, plat, plan)
    assert list(traced["ext_accesses"]) == list(plan["ext_accesses"])
    assert (traced["local_bytes"] <= capacity).all()
    m = composed.planned_mapping(net["c2"], plat, plan.set_index("layer").loc["c2"].to_dict())
    assert m.kept == (state, False) and replay_table(m)["equal"].all()
    assert [h for s in m.shares for h in s.halo] == gathered
    unfused = network_plan(net, plat, "energy", "off", caches=Caches())
    assert plan["energy_pj"].sum() < unfused["energy_pj"].sum()

def test_planning_on_levels_shows_a_bar_per_layer(capsys) -> None:
    """Blocking a network's layers over levels takes seconds: with progress, a bar on stderr
    counts the conv/fc layers; the plan is the one made without it."""
    net, plat = layers.load_network("lenet5"), platforms.load_platform("seed001_3level")
    caches = Caches()
    shown = network_plan(net, plat, "energy", "off", progress=True, caches=caches)
    err = capsys.readouterr().err
    assert "blocking layers over levels" in err and "0/4" in err
    quiet = network_plan(net, plat, "energy", "off", caches=Caches())
    assert list(shown["energy_pj"]) == list(quiet["energy_pj"])

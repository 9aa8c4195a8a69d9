"""simd.codegen schedules: packed schedules conflict-free (an independent checker), no
packing for 1x1 kernels, modulo schedules valid and at the brute-force minimum II on tiny
graphs, and the detectors' IIs beside seed 003 table 5."""

from __future__ import annotations

import math

import pytest
from brute_modulo import min_ii
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import layers, platforms
from workbench.simd import codegen

NVE = platforms.load_platform("nve")
PORT_OF = {"MEMA": "A", "MEMB": "B"}


def shape_of(kx, ky, sx, sy, n_in, chunks=None) -> codegen.Shape:
    return codegen.Shape(kx, ky, sx, sy, (tuple(range(n_in)),),
                         (chunks or codegen.full_chunks(kx * ky * n_in),))


def check_schedule(schedule) -> list[str]:
    """Independent checker of one iteration's schedule: no two operations in one field or
    on one port in a cycle (modulo II), every read exactly 2 cycles before the set it feeds,
    every dependence met (t_dst + II·distance >= t_src + latency); and 'delayed' sets: a
    weight set, the last image set of a row or a set-shift that is not directly before the
    VMAC operation that first uses what it loads (a register-load conflict the scheduler
    resolved by moving it)."""
    g, t, ii = schedule.graph, schedule.times, schedule.ii
    problems, seen = [], {}
    for i, op in enumerate(g.ops):
        key = (op.field, t[i] % ii)
        if key in seen:
            problems.append(f"{op} and {g.ops[seen[key]]} share {key}")
        seen[key] = i
    for s, reads in g.reads.items():
        problems += [f"read {g.ops[r]} not 2 before {g.ops[s]}" for r in reads
                     if t[r] != t[s] - 2]
    problems += [f"edge {g.ops[e.src]} -> {g.ops[e.dst]} broken" for e in g.edges
                 if t[e.dst] + ii * e.distance < t[e.src] + e.latency]
    first_use = {}
    for i, op in enumerate(g.ops):
        if op.kind == "setb":
            first_use[("w", op.arg[0], 0)] = t[i]
        if op.kind == "mac":
            o, p, ky, kx = op.arg
            j = 1 + (g.shape.inputs[o].index(p) * g.shape.ky + ky) * g.shape.kx + kx
            first_use[("w", o, j)] = t[i]
            first_use[("i", o, p, ky, kx)] = t[i]
    starts = {o: [sum(c[:k]) for k in range(len(c))] for o, c in enumerate(g.shape.chunks)}
    for i, op in enumerate(g.ops):
        if op.kind == "setw":
            want = first_use[("w", op.arg[0], starts[op.arg[0]][op.arg[1]])] - 1
        elif op.kind == "seti" and op.arg[3] == g.shape.sx - 1:
            want = first_use[("i", *op.arg[:3], 0)] - 1
        elif op.kind == "setsh":
            want = first_use[("i", *op.arg, 1)] - 1
        else:
            continue
        if t[i] != want:
            problems.append(f"delayed {op}: cycle {t[i]}, its VMAC at {want + 1}")
    return problems


@settings(max_examples=examples(40))
@given(kx=st.integers(1, 6), ky=st.integers(1, 6), sx=st.integers(1, 2), n_in=st.integers(1, 6))
def test_packed_schedules_are_conflict_free(kx, ky, sx, n_in) -> None:
    """Where packing reports success, the checker finds no delayed set and no resource
    clash; where the automatic schedule had conflicts, the checker sees them (it can fail)."""
    shape = shape_of(kx, ky, sx, sx, n_in)
    auto = codegen.list_schedule(codegen.build_graph(shape))
    packed_shape, (result,) = codegen.pack(shape)
    packed = codegen.list_schedule(codegen.build_graph(packed_shape))
    auto_problems = check_schedule(auto)
    assert not [p for p in auto_problems if not p.startswith("delayed")]
    if auto.conflicts:
        assert any(p.startswith("delayed") for p in auto_problems)
    if result.found:
        assert not packed.conflicts and check_schedule(packed) == []
    else:
        assert result.chunks == codegen.full_chunks(kx * ky * n_in)


@pytest.mark.parametrize(("k", "n_in"), [(3, 1), (5, 8)])
def test_packing_removes_the_conflicts(k, n_in) -> None:
    """Seed 003's 3x3 filter and the speed-sign detector's L3 programs (5x5, 8 maps): the
    checker finds delayed sets in the automatic schedule and none once packed."""
    shape = shape_of(k, k, 1, 1, n_in)
    auto = codegen.list_schedule(codegen.build_graph(shape))
    packed_shape, (result,) = codegen.pack(shape)
    packed = codegen.list_schedule(codegen.build_graph(packed_shape))
    assert any(p.startswith("delayed") for p in check_schedule(auto))
    assert result.found and check_schedule(packed) == []
    assert packed.idle_mac_slots() == 0 < auto.idle_mac_slots()


@pytest.mark.parametrize("n_in", [4, 5, 14, 80])
def test_no_packing_for_1x1_kernels(n_in) -> None:
    """Seed 003 §5.1: a 1x1 kernel loads the image register before every MAC, so no cycle is
    free for a weight load once a second load is needed (bias + 4 weights or more); the
    full layout is kept and its conflicts remain."""
    shape, (result,) = codegen.pack(shape_of(1, 1, 1, 1, n_in))
    assert not result.found and result.chunks == codegen.full_chunks(n_in)
    assert codegen.list_schedule(codegen.build_graph(shape)).conflicts


TINY = [(1, 1, 1, 1, 1), (2, 1, 1, 1, 1), (1, 2, 1, 1, 1), (1, 1, 2, 2, 1), (1, 1, 1, 1, 2),
        (1, 1, 1, 2, 1), (2, 1, 2, 1, 1)]


@st.composite
def tiny_graphs(draw):
    kx, ky, sx, sy, n_in = draw(st.sampled_from(TINY))
    taps = kx * ky * n_in
    chunks, left = [], taps + 1
    while left:
        size = draw(st.integers(1, min(4, left)))
        chunks.append(size)
        left -= size
    return codegen.build_graph(shape_of(kx, ky, sx, sy, n_in, tuple(chunks)))


@settings(max_examples=examples(30))
@given(graph=tiny_graphs())
def test_modulo_ii_is_the_brute_force_minimum(graph) -> None:
    """On tiny graphs an exhaustive search gives the least II any modulo schedule reaches:
    the scheduler reaches it, and where it equals the MII (resources allow), II = MII."""
    best = min_ii(graph)
    wrapped = codegen.modulo_schedule(codegen.list_schedule(graph))
    assert check_schedule(wrapped) == [] or all(p.startswith("delayed")
                                                for p in check_schedule(wrapped))
    assert codegen.minimum_ii(graph) <= best == wrapped.ii


def detector_layers():
    for net in ("face_detector", "speed_sign_detector"):
        for layer in layers.load_network(net).layers:
            yield pytest.param(net, layer, id=f"{net}-{layer.name}")


# Seed 003 table 5 (MAC/instruction of 16 lanes): the modulo-scheduled steady state of one
# output vector is useful MACs / (MAC/instruction) cycles. Face L3: 576 / 15.53 = 37.1;
# speed-sign L3: 3,200 / 15.88 = 201.5; L4: 224 / 4.87 = 46.0 and 1,280 / 4.9 = 261.2; L1
# (both): 576 / 13.39 = 43.0 automatic, 576 / 13.71 = 42.0 manual (the MII).
SEED_II = {("face_detector", "L1"): (43, 42), ("face_detector", "L3"): (37, 37),
           ("face_detector", "L4"): (46, 46), ("speed_sign_detector", "L1"): (43, 42),
           ("speed_sign_detector", "L3"): (201, 201), ("speed_sign_detector", "L4"): (261, 261)}


@pytest.mark.parametrize(("net", "layer"), list(detector_layers()))
def test_detector_modulo_schedules(net, layer) -> None:
    """Every program of the detectors' layers: a valid modulo schedule no longer than the
    list schedule, within a few cycles of its MII; where seed 003 table 5 prints the
    layer's MAC/instruction, the II it implies."""
    programs = codegen.compile_layer(layer, NVE, "modulo")
    for c in {c.shape.inputs: c for c in programs}.values():
        problems = check_schedule(c.schedule)
        assert not [p for p in problems if not p.startswith("delayed")]
        base = codegen.list_schedule(codegen.build_graph(c.shape))
        assert c.mii <= c.schedule.ii <= min(base.length, c.mii + 2)
        assert c.schedule.ii == math.ceil(c.schedule.ii)
    if (net, layer.name) in SEED_II:
        ii, mii = SEED_II[(net, layer.name)]
        assert {(c.schedule.ii, c.mii) for c in programs} == {(ii, mii)}

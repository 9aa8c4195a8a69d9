"""simd.codegen: task graphs against the issue model and seed 003's 3x3 example, generated
programs bit-exact against a scalar reference, and the executor's timing checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from budget import examples
from codegen_ref import scalar_conv
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import platforms
from workbench.errors import WorkbenchError
from workbench.layers import ConvLayer
from workbench.simd import codegen
from workbench.simd.codegen.listsched import Schedule
from workbench.simd.issue import nve_counts

NVE = platforms.load_platform("nve")


def one_map_shape(kx, ky, sx, sy, n_in, chunks=None) -> codegen.Shape:
    taps = kx * ky * n_in
    return codegen.Shape(kx, ky, sx, sy, (tuple(range(n_in)),),
                         (chunks or codegen.full_chunks(taps),))


@settings(max_examples=examples(60))
@given(kx=st.integers(1, 7), ky=st.integers(1, 7), sx=st.integers(1, 2), sy=st.integers(1, 3),
       n_in=st.integers(1, 5))
def test_graph_field_counts_are_the_issue_models(kx, ky, sx, sy, n_in) -> None:
    """Operations per field of one iteration, counted op by op in the task graph, equal the
    closed-form counts of simd.issue.nve_counts (one output vector, 4 coefficients a load)."""
    graph = codegen.build_graph(one_map_shape(kx, ky, sx, sy, n_in))
    layer = ConvLayer(name="c", Ox=16, Oy=4, Oc=1, Kx=kx, Ky=ky, Kc=n_in, Sx=sx, Sy=sy)
    counts = nve_counts(layer, (16, 1, 1, 1, n_in), NVE)
    assert {f: graph.count(f) for f in codegen.FIELDS} == counts.ii_by_resource
    assert codegen.resource_mii(graph) == counts.mii


def test_seed_3x3_example() -> None:
    """Seed 003 §4.2, §5.1, §5.2 on the 3x3 filter: 1 set bias and 9 MACs; 3 set, 3 set-shift
    and 3 shift image operations; 3 weight sets and 7 shifts; 6 image reads for the sets, 3
    for the set-shifts, 3 weight reads; the automatic schedule's conflict is between the
    second weight load and the second image load; packing first loads [b w0 w1 -]; modulo
    scheduling wraps the schedule at 10 cycles, where VMAC and WREG are busy every cycle."""
    graph = codegen.build_graph(one_map_shape(3, 3, 1, 1, 1))
    kinds = [op.kind for op in graph.ops]
    assert (kinds.count("setb"), kinds.count("mac")) == (1, 9)
    assert (kinds.count("seti"), kinds.count("setsh"), kinds.count("shi")) == (3, 3, 3)
    assert (kinds.count("setw"), kinds.count("shw")) == (3, 7)
    image_reads = [op for op in graph.ops if op.kind == "rdi"]
    assert len(image_reads) == 9 and kinds.count("rdw") == 3
    auto = codegen.list_schedule(graph)
    (delayed, holder), = auto.conflicts
    pair = sorted([graph.ops[delayed], graph.ops[holder]], key=lambda op: op.kind)
    assert (pair[0].kind, pair[0].arg[2]) == ("seti", 1)      # second image row
    assert (pair[1].kind, pair[1].arg[1]) == ("setw", 1)      # second weight load
    packed, (result,) = codegen.pack(graph.shape)
    assert result.found and result.chunks[0] == 3
    wrapped = codegen.modulo_schedule(codegen.list_schedule(codegen.build_graph(packed)))
    assert wrapped.ii == codegen.minimum_ii(graph) == 10


@st.composite
def small_layers(draw) -> tuple[ConvLayer, str]:
    kx, ky = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    sx, sy = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    maps, oc = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    pad = draw(st.integers(0, (min(kx, ky) - 1) // 2))
    sparse = draw(st.booleans())
    table = None
    if sparse:
        table = tuple(tuple(sorted(draw(st.sets(st.integers(0, maps - 1), min_size=1))))
                      for _ in range(oc))
    layer = ConvLayer(name="r", Ox=draw(st.integers(1, 20)), Oy=draw(st.integers(1, 3)),
                      Oc=oc, On=draw(st.integers(1, 2)), Kx=kx, Ky=ky, Kc=maps, Sx=sx, Sy=sy,
                      Px=pad, Py=pad, connections=table)
    return layer, draw(st.sampled_from(codegen.VERSIONS))


@settings(max_examples=examples(150))
@given(case=small_layers(), seed=st.integers(0, 2**16), read=st.integers(1, 3),
       act=st.integers(1, 5))
def test_generated_code_is_bit_exact(case, seed, read, act) -> None:
    """Every version's programs, run cycle by cycle on every strip, give the scalar
    reference's accumulator codes (random kernels, strides, padding, connection tables, and
    read and MAC-to-activation latencies other than the preset's 2 and 3)."""
    layer, version = case
    plat = platforms.load_platform("nve", load_latency=read, mac_latency=act)
    operands = codegen.random_operands(layer, plat, seed)
    got = codegen.layer_outputs(layer, plat, version, operands)
    np.testing.assert_array_equal(got, scalar_conv(layer, operands, plat.acc_bits))


@settings(max_examples=examples(30))
@given(case=small_layers(), seed=st.integers(0, 2**16))
def test_saturating_accumulators(case, seed) -> None:
    """18-bit saturating accumulators: the MACs of a vector run in tap order, so every
    version gives the scalar reference that saturates after each addition in that order."""
    layer, version = case
    plat = platforms.load_platform("nve", overflow="saturate", acc_bits=18)
    operands = codegen.random_operands(layer, plat, seed)
    got = codegen.layer_outputs(layer, plat, version, operands)
    np.testing.assert_array_equal(got, scalar_conv(layer, operands, 18, "saturate"))


def test_saturation_happens() -> None:
    """The saturating case above is not vacuous: with 18 bits, sums of 9 products of 8-bit
    pixels and 16-bit weights leave the range, and the two modes differ."""
    layer = ConvLayer(name="s", Ox=16, Oy=2, Oc=1, Kx=3, Ky=3, Kc=1)
    operands = codegen.random_operands(layer, NVE, 3)
    sat = platforms.load_platform("nve", overflow="saturate", acc_bits=18)
    wrapped = platforms.load_platform("nve", acc_bits=18)
    a = codegen.layer_outputs(layer, sat, "modulo", operands)
    b = codegen.layer_outputs(layer, wrapped, "modulo", operands)
    assert (np.abs(a) == (1 << 17) - 1).any() or (a == -(1 << 17)).any()
    assert not np.array_equal(a, b)


def test_layout_parts_add_up_and_cycles_are_measured() -> None:
    """Init, prologue, kernel × repeats and epilogue: (n − 1)·II + length after the init."""
    shape, _ = codegen.pack(one_map_shape(3, 3, 1, 1, 2))
    schedule = codegen.modulo_schedule(codegen.list_schedule(codegen.build_graph(shape)))
    assert schedule.stages >= 2
    for n in (1, schedule.stages - 1, schedule.stages, 9):
        program = codegen.layout(schedule, n)
        assert program.cycles == program.init_cycles + (n - 1) * schedule.ii + schedule.length
        layer = ConvLayer(name="c", Ox=16, Oy=n, Oc=1, Kx=3, Ky=3, Kc=2)
        ops = codegen.random_operands(layer, NVE, n)
        image = np.zeros((2, n + 2, 24), dtype=np.int64)
        image[:, :, :18] = ops["q_in"][0]
        coefs = [np.concatenate([[ops["q_b"][0]], ops["q_w"][0].reshape(-1)])]
        run = codegen.execute(program, image, coefs)
        assert run.cycles == program.cycles and run.mac_ops == 18 * n
        np.testing.assert_array_equal(run.outputs[0], scalar_conv(layer, ops)[0, 0])
    assert len(codegen.layout(schedule, 9).kernel) == schedule.ii


def test_executor_rejects_overlapping_iterations() -> None:
    """A list schedule squeezed below its length overlaps iterations that share registers:
    the run stops at the first clobbered value instead of producing wrong codes."""
    schedule = codegen.list_schedule(codegen.build_graph(one_map_shape(3, 3, 1, 1, 1)))
    squeezed = dataclasses.replace(schedule, ii=schedule.length // 2)
    program = codegen.layout(squeezed, 4)
    image = np.ones((1, 6, 24), dtype=np.int64)
    with pytest.raises(codegen.ProgramError, match="cycle"):
        codegen.execute(program, image, [np.ones(10, dtype=np.int64)])
    assert isinstance(squeezed, Schedule)


def test_buffer_capacity_and_bad_input() -> None:
    layer = ConvLayer(name="big", Ox=16, Oy=4, Oc=1, Kx=5, Ky=5, Kc=40)
    tiny = platforms.load_platform("nve", local_mem_bytes=1024)
    c = codegen.compile_layer(layer, tiny, "automatic")[0]
    with pytest.raises(WorkbenchError, match=r"needs \d+ words of 8 bytes; the platform has "
                                             r"1024 bytes"):
        codegen.versions.run_program(layer, c, tiny, codegen.random_operands(layer, tiny))
    with pytest.raises(WorkbenchError, match="targets the NVE"):
        codegen.compile_layer(layer, platforms.load_platform("idsp"), "automatic")
    with pytest.raises(WorkbenchError, match="version must be one of"):
        codegen.compile_layer(layer, NVE, "manual")
    wide = ConvLayer(name="wide", Ox=16, Oy=2, Oc=1, Kx=9, Ky=1, Kc=1)
    with pytest.raises(WorkbenchError, match="extra image registers"):
        codegen.compile_layer(wide, NVE, "automatic")

"""Cycle model over the levels (workbench.hierarchy.timing): a tiny layer by hand, and on
random blockings the parts come from the executor's counts, the overlapped total is the
largest part and the serial total their sum."""

from __future__ import annotations

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hierarchy_datapath import datapath_case

from workbench.errors import SpecError
from workbench.hierarchy import (
    ARRAYS,
    GROUP0,
    Blocking,
    ElementBytes,
    Hierarchy,
    Level,
    evaluate,
    executor,
)
from workbench.hierarchy.blocking import holders, transfers
from workbench.hierarchy.datapath import Datapath
from workbench.hierarchy.timing import Timing, timing_of
from workbench.layers import ConvLayer

ONE = ElementBytes(1, 1, 1, 1)


def _tiny(dram_bw, l1_bw, clock=None):
    """tests/test_hierarchy_datapath.py's tiny layer (1×1, 3 columns, 2 input and 2 output
    maps, held whole in L1) on an X2×C2 datapath."""
    layer = ConvLayer(name="tiny", Ox=3, Oy=1, Oc=2, Kc=2)
    blocking = Blocking.of([GROUP0], [], {a: [6] for a in ARRAYS})
    hier = Hierarchy((Level("DRAM", None, 8, 10.0, dram_bw), Level("L1", 1024, 8, 1.0, l1_bw)),
                     datapath=Datapath({"X": 2, "C": 2}, clock_mhz=clock))
    return evaluate(layer, blocking, hier, ONE)


def test_tiny_layer_by_hand() -> None:
    """4 steps. DRAM's link carries 6 inputs + 4 weights in and 6 final outputs back: 16
    elements, 8 cycles at 2 per cycle. L1's carries 12 inputs + 8 weights to the datapath and
    6 outputs back: 26, 6.5 cycles at 4. Overlapped: 8 cycles, DRAM-bound; serial 4 + 8 + 6.5
    = 18.5; at 100 MHz 80 ns and 185 ns."""
    res = _tiny(2.0, 4.0, clock=100.0)
    t = res.timing
    assert t.compute_cycles == 4 and res.steps == 4
    assert t.link_elements == {"DRAM": 16, "L1": 26}
    assert t.link_cycles == {"DRAM": 8.0, "L1": 6.5}
    assert (res.cycles, res.bound, t.serial_cycles) == (8.0, "DRAM", 18.5)
    assert t.seconds == pytest.approx(80e-9, rel=1e-12)
    assert t.serial_seconds == pytest.approx(185e-9, rel=1e-12)


def test_an_ideal_array_divides_the_scalar_steps() -> None:
    """A datapath of 8 ideal MACs per cycle (mapping not modelled): the tiny layer's 12 MACs
    are fetched as a scalar datapath's (12 inputs, 12 weights) and take 12 / 8 = 1.5 cycles;
    the links are unchanged. Unroll and ideal MACs together are refused."""
    layer = ConvLayer(name="tiny", Ox=3, Oy=1, Oc=2, Kc=2)
    blocking = Blocking.of([GROUP0], [], {a: [6] for a in ARRAYS})
    levels = (Level("DRAM", None, 8, 10.0, 2.0), Level("L1", 1024, 8, 1.0, 4.0))
    scalar = evaluate(layer, blocking, Hierarchy(levels), ONE)
    ideal = evaluate(layer, blocking, Hierarchy(levels, datapath=Datapath(
        clock_mhz=100.0, ideal_macs_per_cycle=8)), ONE)
    assert scalar.timing.compute_cycles == 12 and ideal.timing.compute_cycles == 1.5
    assert ideal.accesses == scalar.accesses and ideal.energy_pj == scalar.energy_pj
    assert ideal.timing.link_cycles == scalar.timing.link_cycles
    assert ideal.timing.seconds == pytest.approx(ideal.timing.cycles / 100e6, rel=1e-12)
    with pytest.raises(SpecError, match="ideal_macs_per_cycle: must be a finite number > 0 "
                                        "on a datapath without unroll"):
        Datapath({"C": 2}, ideal_macs_per_cycle=4)
    with pytest.raises(SpecError, match="ideal_macs_per_cycle"):
        Datapath(ideal_macs_per_cycle=0)


def test_unlimited_links_are_compute_bound() -> None:
    res = _tiny(None, None)
    assert res.timing.link_cycles == {"DRAM": 0.0, "L1": 0.0}
    assert (res.cycles, res.bound, res.timing.serial_cycles) == (4.0, "compute", 4.0)
    assert res.timing.seconds is None           # no clock: cycles only


def test_innermost_link_bound() -> None:
    """L1 at 1 element per cycle: 26 cycles, L1-bound."""
    res = _tiny(None, 1.0)
    assert (res.cycles, res.bound) == (26.0, "L1")


def test_ties_go_to_compute() -> None:
    assert Timing(4, {"DRAM": 8}, {"DRAM": 4.0}).bound == "compute"


@settings(max_examples=examples(80))
@given(case=datapath_case(on_chip=2), data=st.data())
def test_parts_from_executor_and_totals(case, data) -> None:
    """Compute cycles are the executor's steps; each link carries what the executor moves
    through it (loads and partial sums sent inwards, write-backs received); the overlapped
    total is the largest part and at least every part, the serial one their sum."""
    layer, blocking, dp = case
    bandwidths = [data.draw(st.one_of(st.none(), st.floats(0.25, 64))) for _ in range(3)]
    levels = tuple(Level(name, cap, 16, 1.0, bw) for name, cap, bw in
                   zip(("DRAM", "L2", "L1"), (None, 1 << 20, 1 << 16), bandwidths, strict=True))
    hier = Hierarchy(levels, datapath=dp)
    t = timing_of(transfers(layer, blocking, 3, dp), hier)  # any blocking the executor runs
    ran = executor.execute(layer, blocking, dp)
    assert t.compute_cycles == ran[("I", 3)]["steps"]
    sent = [0, 0, 0]
    for array in ARRAYS:
        source = 0
        for level, _ in holders(blocking, array, 3):
            sent[source] += ran[(array, level)]["moved"] + ran[(array, level)]["partial_reads"]
            source = level
    assert list(t.link_elements.values()) == sent
    parts = t.parts()
    for (name, count), bw in zip(t.link_elements.items(), bandwidths, strict=True):
        assert parts[name] == (0.0 if bw is None else count / bw)
    assert all(t.cycles >= p for p in parts.values())
    assert t.cycles == max(parts.values()) == parts[t.bound]
    assert t.serial_cycles == pytest.approx(sum(parts.values()), rel=1e-12)
    assert t.serial_cycles >= t.cycles

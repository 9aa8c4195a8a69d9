"""Sparse connection tables on a memory hierarchy (`layers.spec.as_grouped`): a table that is
G disjoint complete blocks of equal shape is the grouped convolution it is, so the hierarchy
model prices it exactly as that convolution written out by hand (renumbered maps change no
count); any other table is priced as the dense layer, an upper bound the CLI names."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import layers
from workbench.hierarchy import ElementBytes, Hierarchy, Level, evaluate
from workbench.hierarchy.executor import execute
from workbench.hierarchy.search import search
from workbench.layers import ConvLayer
from workbench.layers.spec import as_grouped, regular_connections

PREC = ElementBytes(1, 1, 1, 2)
TWO = Hierarchy((Level("DRAM", None, 64, 200.0), Level("SRAM", 2048, 64, 6.0),
                 Level("RF", 64, 16, 0.5)), mac_energy_pj=1.0)


@st.composite
def grouped_table(draw: st.DrawFn):
    """A layer whose connection table is G blocks of `outs` output maps each reading the same
    k input maps, the maps of both sides shuffled, and the grouped layer it is, by hand."""
    g, k, outs = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    inputs = draw(st.permutations(range(g * k)))
    order = draw(st.permutations(range(g * outs)))
    rows: list[tuple[int, ...]] = [()] * (g * outs)
    for o, position in enumerate(order):
        block = o // outs
        rows[position] = tuple(sorted(inputs[block * k:(block + 1) * k]))
    shape = dict(Ox=draw(st.integers(1, 4)), Oy=draw(st.integers(1, 3)),
                 Kx=draw(st.integers(1, 3)), Ky=1, Sx=draw(st.integers(1, 2)))
    sparse = ConvLayer(name="t", Oc=g * outs, Kc=g * k, connections=tuple(rows), **shape)
    grouped = ConvLayer(name="t", Oc=g * outs, Kc=k, groups=g, **shape)
    return sparse, grouped


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=grouped_table())
def test_a_grouped_table_is_priced_as_its_grouped_layer(case) -> None:
    """The search's optimum, its blocking's counts and energy, and the literal executor's
    counts are those of the grouped layer written by hand; MACs are the table's."""
    sparse, grouped = case
    assert as_grouped(sparse) == grouped and regular_connections(sparse)
    assert sparse.macs == grouped.macs
    found = search(sparse, TWO, PREC)
    assert found.energy_pj == pytest.approx(search(grouped, TWO, PREC).energy_pj, rel=1e-12)
    mine, theirs = evaluate(sparse, found.blocking, TWO, PREC), \
        evaluate(grouped, found.blocking, TWO, PREC)
    assert mine.accesses == theirs.accesses and mine.energy_pj == theirs.energy_pj
    assert execute(sparse, found.blocking) == execute(grouped, found.blocking)
    assert mine.energy_pj["mac"] == pytest.approx(sparse.macs * TWO.mac_energy_pj)


def test_irregular_tables_stay_dense() -> None:
    """A map read by two blocks, blocks of unequal width or unequal output counts: no groups
    (the dense layer is priced, an upper bound)."""
    base = dict(name="t", Ox=2, Oy=2, Kx=1, Ky=1)
    for rows in (((0, 1), (1, 2)), ((0,), (1, 2)), ((0,), (0,), (1,))):
        layer = ConvLayer(Oc=len(rows), Kc=3, connections=rows, **base)
        assert as_grouped(layer) is layer and not regular_connections(layer)


def test_seed003_detectors_and_the_cli_note() -> None:
    """face_detector's L3 (each map its own input) is 14 groups and speed_sign_detector's L3
    two groups of 40 maps reading 8; face_detector's L2 is irregular: the hierarchy command
    prices it dense and names it with its real and priced MACs (Kx·Ky·Kc·Oc·Ox·Oy·On)."""
    face = {lay.name: lay for lay in layers.load_network("face_detector").tiled_layers()}
    sign = {lay.name: lay for lay in layers.load_network("speed_sign_detector").tiled_layers()}
    assert (as_grouped(face["L3"]).groups, as_grouped(face["L3"]).Kc) == (14, 1)
    assert (as_grouped(sign["L3"]).groups, as_grouped(sign["L3"]).Kc) == (2, 8)
    assert not regular_connections(face["L2"])
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "hierarchy", "face_detector",
                          "--levels", "seed001_two_level", "--json"], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    # seed 003 appendix A's L2: 4×4 kernels, 4 input and 14 output maps, 317×177 outputs
    assert (face["L2"].Kx, face["L2"].Ox, face["L2"].Oy) == (4, 317, 177)
    assert doc["dense_priced"] == {"L2": [17_954_880, 4 * 4 * 4 * 14 * 317 * 177]}
    mac = {r["layer"]: r for r in doc["rows"] if r["level"] == "MAC"}
    assert mac["L3"]["energy_pj"] == pytest.approx(face["L3"].macs * 1.0)

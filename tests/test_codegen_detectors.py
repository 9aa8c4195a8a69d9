"""simd.codegen on the face and speed-sign detectors' layers (seed 003 app. A): every
version's programs bit-exact against a scalar reference, on the layers' own kernels, strides
and connection tables over a few output rows and columns."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from budget import examples
from codegen_ref import scalar_conv
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import layers, platforms
from workbench.simd import codegen

NVE = platforms.load_platform("nve")


def shrunk(layer):
    """The layer over a 3 x 2 output (two strips of 16 columns when Ox allows: 18 columns);
    speed-sign L3's 80 maps cut to four (two of each connection-table row)."""
    small = dataclasses.replace(layer, Ox=18, Oy=2)
    if layer.Oc > 20:
        rows = layer.connections
        keep = (0, 1, layer.Oc - 2, layer.Oc - 1)
        small = dataclasses.replace(small, Oc=4, connections=tuple(rows[m] for m in keep))
    return small


CASES = [pytest.param(layer, id=f"{net}-{layer.name}")
         for net in ("face_detector", "speed_sign_detector")
         for layer in layers.load_network(net).layers]


@pytest.mark.parametrize("version", codegen.VERSIONS)
@pytest.mark.parametrize("layer", CASES)
@settings(max_examples=examples(2))
@given(seed=st.integers(0, 2**16))
def test_detector_layers_bit_exact(layer, version, seed) -> None:
    small = shrunk(layer)
    operands = codegen.random_operands(small, NVE, seed)
    got = codegen.layer_outputs(small, NVE, version, operands)
    np.testing.assert_array_equal(got, scalar_conv(small, operands, NVE.acc_bits))


def test_fusion_shares_the_pixel_writes() -> None:
    """Face L1's four maps read one input map: fused, one program writes its rows once."""
    face = layers.load_network("face_detector")
    fused = codegen.compile_layer(face["L1"], NVE, "fusion")
    alone = codegen.compile_layer(face["L1"], NVE, "modulo")
    assert [c.outputs for c in fused] == [(0, 1, 2, 3)] and len(alone) == 4
    writes = [sum(op.kind == "wr" for op in c.schedule.graph.ops) for c in (fused[0], alone[0])]
    assert writes[0] == writes[1]   # the same rows, written once for four outputs

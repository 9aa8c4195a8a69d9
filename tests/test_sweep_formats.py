"""A sweep over number formats (`Grid.number_formats`): accuracy beside traffic and energy for
dynamic fixed point and the float formats, on LeNet-5 with its shipped weights and MNIST.

References: the float formats' accuracy recomputed here with ml_dtypes' casts (saturated to
the format's largest value first, as the workbench's formats saturate) at every layer's
weights and output maps, through the workbench's float inference; the "fixed" case plans as a
sweep without formats, and a float case as the same sweep with `elem_bytes` overridden to
the format's size. (The fixed-point accuracy is the quantizer's search, tested elsewhere.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench import layers, quant, sweep
from workbench.errors import WorkbenchError
from workbench.quant import mnist

ml_dtypes = pytest.importorskip("ml_dtypes")
CASTS = {"fp16": (np.float16, 65504.0), "bf16": (ml_dtypes.bfloat16, 3.3895313892515355e38),
         "fp8-e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "fp8-e5m2": (ml_dtypes.float8_e5m2,
                                                                   57344.0)}
COMMON = {"networks": ["lenet5"], "platforms": ["idsp"], "batch": 1, "memory_kb": [16],
          "acc_bits": [16]}


def _cast(x: np.ndarray, name: str) -> np.ndarray:
    kind, largest = CASTS[name]
    x = np.clip(np.asarray(x, np.float32), -largest, largest)
    return x.astype(kind).astype(np.float32)


def _reference_accuracy(name: str) -> float:
    """Every layer's weights and output maps cast by ml_dtypes (numpy for fp16)."""
    from workbench.quant.graph import INPUT, graph_of
    from workbench.quant.infer import Act, advance, to_channel_major

    net = layers.load_network("lenet5")
    params = quant.load_weights("lenet5_mnist.npz", net)
    cast = {k: (_cast(w, name), np.asarray(b, np.float32)) for k, (w, b) in params.items()}
    x, y = mnist.load("test")
    graph = graph_of(net)
    state = {INPUT: Act(to_channel_major(np.asarray(x, np.float32)))}
    for index, layer in enumerate(net.layers):
        state = advance(net, cast, state, start=index, stop=index + 1, graph=graph)
        state[layer.name] = Act(_cast(state[layer.name].as_float(np.float64), name))
    out = state[net.layers[-1].name].as_float(np.float64)
    return float((out.reshape(out.shape[0], -1).argmax(axis=0) == y).mean())


def test_float_formats_weigh_accuracy_against_traffic_and_energy(tmp_path: Path) -> None:
    frame = sweep.run(sweep.Grid(**COMMON, weights={"lenet5": "lenet5_mnist.npz"},
                                 number_formats=list(CASTS)), tmp_path)
    assert not frame.attrs["failures"] and frame["case_id"].is_unique
    rows = frame.set_index("number_format")
    assert rows["elem_bytes"].to_dict() == {"fp16": 2, "bf16": 2, "fp8-e4m3": 1,
                                            "fp8-e5m2": 1}
    for name in CASTS:
        assert abs(rows.loc[name, "accuracy"] - _reference_accuracy(name)) <= 0.002, name
    net = layers.load_network("lenet5")
    float32 = quant.accuracy(net, quant.load_weights("lenet5_mnist.npz", net),
                             *mnist.load("test"))
    assert rows.loc["fp16", "accuracy"] == pytest.approx(float32, abs=0.002)
    traffic = rows["ext_accesses"] * rows["elem_bytes"]  # bytes
    assert traffic["fp8-e4m3"] <= traffic["fp16"] / 2  # half the bytes, more fit on chip
    assert rows.loc["fp8-e4m3", "energy_uj"] < rows.loc["fp16", "energy_uj"]


def test_fixed_is_the_platform_and_a_float_format_its_element_size(tmp_path: Path) -> None:
    """"fixed" plans as the sweep without formats; fp8 as the sweep with elem_bytes 1."""
    frame = sweep.run(sweep.Grid(**COMMON, number_formats=["fixed", "fp8-e5m2"]),
                      tmp_path / "formats").set_index("number_format")
    without = sweep.run(sweep.Grid(**COMMON), tmp_path / "plain").iloc[0]
    one_byte = sweep.run(sweep.Grid(**COMMON, overrides={"elem_bytes": [1]}),
                         tmp_path / "bytes").iloc[0]
    assert frame.loc["fixed", "elem_bytes"] == 2  # idsp's own
    for column in ("cycles", "energy_uj", "ext_accesses"):
        assert frame.loc["fixed", column] == without[column]
        assert frame.loc["fp8-e5m2", column] == one_byte[column]
    assert frame.loc["fp8-e5m2", "ext_accesses"] < without["ext_accesses"]
    assert sweep.Grid(**COMMON).axes() == sweep.Grid(**COMMON, number_formats=["fp16"]).axes(
    )[:-1]


def test_number_format_errors() -> None:
    with pytest.raises(WorkbenchError, match=r"number_formats\[0\]: unknown number format "
                                             "'fp4'"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"], number_formats=["fp4"])
    with pytest.raises(WorkbenchError, match="do not also override elem_bytes"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"], number_formats=["fp16"],
                   overrides={"elem_bytes": [1]})

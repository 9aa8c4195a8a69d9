"""LeNet-5 end to end: the emitted network program, run on the shipped weights and 1,000
held-out MNIST digits, gives exactly the codes, predictions and accuracy of quant.infer's
bit-true inference in the formats `workbench quantize`'s search chooses; its measured counts
equal the trace's; and bad networks are refused in one line."""

from __future__ import annotations

import dataclasses
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from workbench import layers, quant
from workbench.emit import plan_mappings
from workbench.emit.network import check_network
from workbench.emit.network_run import run_network
from workbench.errors import WorkbenchError
from workbench.platforms import load_platform
from workbench.quant import mnist

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


@pytest.fixture(scope="module")
def lenet():
    net = layers.load_network("lenet5", batch=10)
    params = quant.load_weights("lenet5_mnist.npz", net)
    cx, cy = mnist.load("calib")
    config = quant.search(net, params, cx, cx[:200], cy[:200],
                          quant.SearchOptions(acc_bits=16, jobs=1)).config
    return net, params, config


def test_lenet5_program_predicts_as_quantize(lenet, tmp_path) -> None:
    net, params, config = lenet
    tx, ty = mnist.load("test")
    maps = plan_mappings(net, load_platform("idsp"), "cycles", config)
    run = run_network(net, maps, params, tx, tmp_path / "net", "physical")
    assert len(run.codes) == 1000
    assert np.array_equal(run.codes, run.reference)
    assert np.array_equal(run.predictions, run.reference_predictions)
    accuracy = float((run.predictions == ty).mean())
    assert accuracy == quant.accuracy(net, params, tx, ty, config)
    assert accuracy > 0.9  # the shipped weights classify digits
    assert run.measured == run.modelled


def test_lenet5_program_model_mode_on_few_digits(lenet, tmp_path) -> None:
    net, params, config = lenet
    tx, _ = mnist.load("test")
    maps = plan_mappings(net, load_platform("idsp").replace(cores=2), "energy", config)
    run = run_network(net, maps, params, tx[:20], tmp_path / "net", "model")
    assert np.array_equal(run.codes, run.reference)
    assert run.measured == run.modelled


def test_unsupported_layers_refused_in_one_line(lenet) -> None:
    net, _, config = lenet
    maps = plan_mappings(net, load_platform("idsp"), "cycles", config)
    with pytest.raises(WorkbenchError, match="not emitted"):
        check_network(net, maps[1:])
    alex = layers.load_network("alexnet_oxford102")
    every = [SimpleNamespace(layer=layer) for layer in alex.layers if layer.tiled]
    with pytest.raises(WorkbenchError, match="lrn is not emitted"):
        check_network(alex, every)
    names = [layer.name for layer in net.layers]
    chain = {b: (a,) for a, b in zip(names, names[1:], strict=False)}
    graph = dataclasses.replace(net, inputs=chain)
    with pytest.raises(WorkbenchError, match="layer graph"):
        check_network(graph, maps)

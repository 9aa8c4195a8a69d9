"""Quantized accuracy in a sweep, for any network with weights and data.

Data per network come from the grid (`data: {net: file.npz}` with `calib_x`, `calib_y`,
`test_x`, `test_y`; images N×C×H×W float, labels integer classes). Weights come from
`weights: {net: file}` or, when absent, from the data file itself (keys "<layer>.weight" and
"<layer>.bias"). A network shaped like MNIST (one 28×28 input map, ten outputs) without a data
file uses the shipped MNIST digits. Any other network gets no accuracy, and a note says why.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench import layers
from workbench.errors import WorkbenchError
from workbench.layers.network import Network
from workbench.memo import Caches, caches_or_new
from workbench.quant.weights import load_data_npz

DATA_KEYS = ("calib_x", "calib_y", "test_x", "test_y")
CALIBRATION_IMAGES = 300  # images for range analysis and the search, as the quantize command


def _input_shape(net: Network) -> tuple[int, ...]:
    return tuple(next(iter(net)).in_shape)


def is_mnist_shaped(net: Network) -> bool:
    """One 28×28 input map and ten outputs: the shipped MNIST digits fit this network."""
    return _input_shape(net) == (1, 28, 28) and int(np.prod(list(net)[-1].out_shape)) == 10


def load_data(path: str | Path, net: Network) -> tuple[np.ndarray, ...]:
    """(calib_x, calib_y, test_x, test_y) of a data file, checked against the network
    (`quant.weights.load_data_npz`)."""
    data = load_data_npz(path, net)
    return tuple(data[k] for k in DATA_KEYS)


def data_source(network: str, weights: str | None, data: str | None) -> tuple[str | None, str]:
    """(source, reason): where the network's accuracy data come from ("mnist" or the data
    file), or None with the reason there is none."""
    net = layers.load_network(network)
    if data is not None:
        return data, ""
    if weights is None:
        return None, f"network {network!r} has no weights (grid 'weights' or 'data')"
    if is_mnist_shaped(net):
        return "mnist", ""
    return None, (f"network {network!r} has weights but no calibration/test data: add "
                  f"data: {{{network}: file.npz}} with " + ", ".join(DATA_KEYS))


def check(network: str, weights: str | None, data: str | None) -> str:
    """Fail fast (one line) on a bad data or weights file; returns the note for a network
    without accuracy, '' otherwise."""
    from workbench import quant

    source, reason = data_source(network, weights, data)
    if source is None:
        return reason
    net = layers.load_network(network)
    if source != "mnist":
        load_data(source, net)
    quant.load_weights(weights or source, net)
    return ""


def accuracy(network: str, weights: str | None, data: str | None, acc_bits: int,
             bound: str, caches: Caches | None = None,
             number_format: str | None = None) -> float | None:
    """Held-out accuracy of the network quantized for acc_bits (or, for a float
    `number_format`, with every layer's weights and maps in that format: `quant.floats`),
    None without data (kept in `caches`: the cases of a batch share it). A width too narrow
    for any fixed-point format gives NaN."""
    found = caches_or_new(caches).store("quantized accuracy", dict)
    is_float = number_format not in (None, "fixed")
    key = (network, weights, data, None if is_float else acc_bits, bound, number_format)
    if key in found:
        return found[key]
    source, _reason = data_source(network, weights, data)
    if source is None:
        return None
    from workbench import quant
    from workbench.quant import mnist

    net = layers.load_network(network)
    params = quant.load_weights(weights or source, net)
    if source == "mnist":
        (cx, cy), (tx, ty) = mnist.load("calib"), mnist.load("test")
    else:
        cx, cy, tx, ty = load_data(source, net)
    if is_float:
        from workbench.quant import floats

        names = {layer.name for layer in net.layers}
        found[key] = floats.accuracy_in(net, params, tx, ty,
                                        floats.float_format(number_format), names)
        return found[key]
    n = CALIBRATION_IMAGES
    try:
        res = quant.search(net, params, cx[:n], cx[:n], cy[:n],
                           quant.SearchOptions(acc_bits=acc_bits, bound=bound))
        found[key] = float(quant.accuracy(net, params, tx, ty, res.config))
    except WorkbenchError:
        found[key] = float("nan")
    return found[key]

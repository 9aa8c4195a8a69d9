"""An emitted network program built and run on images, beside `quant.infer`'s bit-true run of
the same formats: the last layer's codes and the predictions (arg-max), and every layer's
measured counts beside the trace's (one pass's, times the passes)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.emit.compare import trace_counts
from workbench.emit.mapping import LayerMapping
from workbench.emit.network import input_codes, network_sources, write_network_program
from workbench.emit.program import build, parse_counts
from workbench.errors import WorkbenchError
from workbench.layers.network import Network
from workbench.quant.infer import forward


@dataclass
class NetworkRun:
    """Codes (N × outputs) and predictions of the program and of `quant.infer`; per layer,
    array and core the measured counts and the trace's for all passes."""

    codes: np.ndarray
    reference: np.ndarray
    measured: dict
    modelled: dict
    seconds: dict

    @property
    def predictions(self) -> np.ndarray:
        return self.codes.argmax(axis=1)

    @property
    def reference_predictions(self) -> np.ndarray:
        return self.reference.argmax(axis=1)


def run_network(net: Network, mappings: list[LayerMapping], params: dict, images: np.ndarray,
                folder: Path, mode: str = "physical") -> NetworkRun:
    """Emit, compile and run the network on NCHW float images (a multiple of its batch)."""
    on = net.layers[0].On
    if len(images) % on:
        raise WorkbenchError(f"{len(images)} images: the program runs {on} at a time; give a "
                             "multiple of the batch")
    t0 = time.perf_counter()
    folder = Path(write_network_program(net, mappings, params, folder)).resolve()
    t1 = time.perf_counter()
    build(folder, network_sources(mappings), "network")
    t2 = time.perf_counter()
    input_codes(images, mappings[0]).tofile(folder / "input.bin")
    done = subprocess.run([str(folder / "network"), str(folder), str(len(images)), mode],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise WorkbenchError(f"emitted network failed ({done.returncode}): "
                             f"{done.stderr.strip()}")
    t3 = time.perf_counter()
    codes = np.fromfile(folder / "output.bin", dtype="<i4").reshape(len(images), -1)
    formats = {m.layer.name: m.fmt for m in mappings}
    ref = forward(net, params, images, formats).values
    ref = np.asarray(np.swapaxes(ref, 0, 1)).reshape(len(images), -1)
    passes = len(images) // on
    from workbench.emit.c_layer import c_name

    modelled = {}
    for m in mappings:
        for (array, core), (e, t) in trace_counts(m, mode).items():
            modelled[c_name(m.layer.name), array, core] = (e * passes, t * passes)
    return NetworkRun(codes, ref, parse_counts(done.stdout), modelled,
                      {"write": t1 - t0, "compile": t2 - t1, "run": t3 - t2})

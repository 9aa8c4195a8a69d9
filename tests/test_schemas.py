"""The validation layer (workbench.schemas) and the loaders wired to it: every bad document is
one WorkbenchError line naming the file, the field path and the rule; good documents load as
before."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import onnx
import pytest
import yaml
from onnx import TensorProto, helper, numpy_helper

from workbench import layers, sweep
from workbench.errors import FileFormatError, SpecError, WorkbenchError
from workbench.layers import spec
from workbench.quant.weights import load_data_npz, load_npz
from workbench.schemas import network as network_schema

ROOT = Path(__file__).resolve().parents[1]
BASE = {"name": "n", "input": [3, 8, 8], "layers": [
    {"name": "c1", "type": "conv", "maps": 4, "kernel": 3, "pad": 1},
    {"name": "n1", "type": "lrn", "size": 3},
    {"name": "p1", "type": "pool", "kernel": 2},
    {"name": "f1", "type": "fc", "outputs": 10}]}


def _with(path: tuple, value: object) -> dict:
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize("path, value, error, expected", [
    (("layers", 1, "beta"), float("nan"), SpecError,
     "layers[1].beta: must be a finite number (no NaN or infinity), got nan (layer 'n1')"),
    (("layers", 1, "alpha"), "x", SpecError, "layers[1].alpha: must be a finite number >= 0"),
    (("layers", 1, "k"), float("inf"), SpecError, "layers[1].k: must be a finite number"),
    (("layers", 1, "size"), 4, SpecError, "layers[1].size: LRN size must be odd, got 4"),
    (("layers", 0, "maps"), 2.5, SpecError, "layers[0].maps: must be a positive integer, got 2.5"),
    (("layers", 0, "maps"), True, SpecError, "layers[0].maps: must be a positive integer, got "
                                             "True"),
    (("layers", 0, "kernel"), [3], SpecError, "layers[0].kernel: must be a positive integer or "
                                              "[height, width]"),
    (("layers", 0, "stride"), 0, SpecError, "layers[0].stride: must be a positive integer"),
    (("layers", 0, "pad"), -1, SpecError, "layers[0].pad: must be a non-negative integer"),
    (("layers", 0, "kernel"), 11, SpecError, "layers[0].kernel: kernel 11x11 larger than padded "
                                             "input 10x10 (layer 'c1')"),
    (("layers", 0, "groups"), 2, SpecError, "layers[0].groups: input maps 3 not divisible by "
                                            "groups 2"),
    (("layers", 0, "groups"), 3, SpecError, "layers[0].groups: output maps 4 not divisible by "
                                            "groups 3"),
    (("layers", 0, "connections"), 5, SpecError, "layers[0].connections: must be a list"),
    (("layers", 0, "connections"), [[0], [1], [2], [3]], SpecError,
     "layers[0].connections[3]: connection row 3 must list input maps in 0..2, got [3]"),
    (("layers", 0, "connections"), [[0, 0], [1], [2], [1]], SpecError,
     "layers[0].connections: row 0 lists an input map twice"),
    (("layers", 0, "connections"), [[0]], SpecError,
     "layers[0].connections: has 1 rows, expected one per output map (4)"),
    (("layers", 0, "out"), [99, 99], SpecError, "layers[0]: layer 'c1': output 99x99 not "
                                                "reachable"),
    (("layers", 0, "kernal"), 3, SpecError, "layers[0].kernal: unknown key; known: "),
    (("layers", 0, "type"), "deconv", SpecError, "layers[0].type: unknown layer type 'deconv'"),
    (("layers", 2, "mode"), "median", SpecError, "layers[2].mode: must be one of max, avg"),
    (("layers", 2, "ceil_mode"), "yes", SpecError, "layers[2].ceil_mode: must be true or false"),
    (("layers", 2, "kernel"), None, SpecError, "layers[2]: kernel is required (or global: true)"),
    (("layers", 3, "name"), "c1", SpecError, "layers[3].name: layer name 'c1' used twice"),
    (("layers", 3), 7, FileFormatError, "layers[3]: must be a mapping with a 'type', got 7"),
    (("layers",), [], FileFormatError, "layers: must not be empty"),
    (("layers",), {"a": 1}, FileFormatError, "layers: must be a list"),
    (("input",), [3, 8], FileFormatError, "input: must be [channels, height, width] of positive "
                                          "integers, got [3, 8]"),
    (("batch",), 0, FileFormatError, "batch: must be a positive integer, got 0"),
    (("name",), "", FileFormatError, "name: must be a non-empty string"),
    (("extra",), 1, FileFormatError, "extra: unknown key; known: batch, input, layers, name"),
    (("layers", 0, "maps"), 2**53, SpecError, "layers[0].maps: must be at most 2^53 - 1"),
    (("layers", 0, "kernel"), [1, 2**60], SpecError, "layers[0].kernel: must be at most 2^53"),
    (("input",), [3, 2**53, 8], FileFormatError, "input: must be [channels, height, width] of "
                                                 "positive integers"),
    (("layers", 2, "global"), True, SpecError, "layers[2]: a global pooling takes no kernel or "
                                               "stride"),
])
def test_bad_network_fields_name_file_path_and_rule(tmp_path: Path, path: tuple, value: object,
                                                    error: type, expected: str) -> None:
    file = tmp_path / "net.yaml"
    file.write_text(yaml.safe_dump(_with(path, value)))
    with pytest.raises(error) as info:
        layers.load_network(file)
    text = str(info.value)
    assert text.startswith(f"network file {str(file)!r}: ") and "\n" not in text
    assert expected in text


def test_more_layer_kinds_and_the_public_builder() -> None:
    doc = {"name": "n", "input": [4, 4, 4], "layers": [
        {"type": "eltwise", "inputs": 1}]}
    with pytest.raises(SpecError, match=r"layers\[0\]\.inputs: must be an integer in 2\.\.") as e:
        layers.network_from_dict(doc, "x.yaml")
    assert str(e.value).startswith("x.yaml: ")
    for layer, rule in [({"type": "eltwise", "op": "min"}, r"\.op: must be one of sum, prod"),
                        ({"type": "concat", "parts": [0]}, r"\.parts\[0\]: must be a positive"),
                        ({"type": "relu", "maps": 3}, r"\.maps: unknown key; known: input, name"),
                        ({"name": 5, "type": "relu"}, r"\.name: must be a non-empty string")]:
        with pytest.raises(SpecError, match=rule):
            layers.build_layers([layer], (4, 4, 4), 1, "n")
    with pytest.raises(SpecError, match=r"^network 'n': layers\[0\]\.input: no input shape"):
        layers.build_layers([{"type": "relu"}], None, 1, "n")
    built = layers.build_layers([{"type": "pool", "global": True}], (4, 5, 6), 2, "n")
    assert (built[0].Kx, built[0].Ky, built[0].out_shape, built[0].On) == (6, 5, (4, 1, 1), 2)


def test_the_zoo_still_loads_with_the_same_layers() -> None:
    net = layers.load_network("lenet5")
    assert net["conv2"].Kc == 32 and len(net) == 10
    face = layers.load_network("face_detector")["L2"]
    assert face.connections is not None and face.Oc == 14
    assert all(len(layers.load_network(name)) for name in layers.list_networks()
               if (ROOT / "data" / "networks" / f"{name}.yaml").exists())


@pytest.mark.parametrize("data, rule", [
    (b"name: n\n\xff\xfe", "not UTF-8 text (invalid byte at offset 8)"),
    (b"name: n\x00\x01\x02", "a binary file, not YAML text"),
    (b"a: " + b"[" * 100 + b"]" * 100, "nested deeper than 64 levels"),
    (b"a: &a [x, x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n".encode()
        for p, c in zip("abcdefg", "bcdefgh", strict=True)),
     "more than 1000000 values once aliases are expanded"),
    (b"name: a\nname: b\nlayers: []\n", "key 'name' given twice in one mapping (line 2)"),
    (b"name: n\nwhen: 2001-13-45\n", "malformed YAML"),
    (b"name: [n\n", "malformed YAML at line 2"),
])
def test_yaml_reading_limits(tmp_path: Path, data: bytes, rule: str) -> None:
    path = tmp_path / "doc.yaml"
    path.write_bytes(data)
    with pytest.raises(FileFormatError) as info:
        layers.load_network(path)
    assert rule in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("text, rule", [
    ("networks: [lenet5]\nplatforms: [idsp]\nmemory_kb: [64, .inf]\n",
     "memory_kb[1]: must be a finite number (no NaN or infinity), got inf"),
    ("networks: [lenet5]\nplatforms: [idsp]\nbatch: 2.5\n", "batch: must be a positive integer"),
    ("networks: [lenet5]\nplatforms: [idsp]\nschedules: [intra, fast]\n",
     "schedules[1]: unknown schedule 'fast'; valid: intra"),
    ("networks: [lenet5]\nplatforms: [idsp]\noverrides: {cores: [1, .nan]}\n",
     "overrides.cores[1]: must be a finite number, true/false or a name, got nan"),
    ("networks: [lenet5]\nplatforms: [idsp]\noverrides: {cores: 4}\n",
     "overrides.cores: must be a list, got 4"),
    ("networks: [lenet5]\nplatforms: [idsp]\nweights: {lenet5: 3}\n",
     "weights.lenet5: must be a non-empty string"),
    ("networks: [lenet5]\nplatforms: [idsp]\nreport_timeout_s: 0\n",
     "report_timeout_s: must be a positive integer, got 0"),
    ("networks: [lenet5]\nplatforms: [idsp, '']\n", "platforms[1]: must be a non-empty string"),
    ("- networks\n", "expected a mapping of grid keys"),
])
def test_bad_grid_fields(tmp_path: Path, text: str, rule: str) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(text)
    with pytest.raises(FileFormatError) as info:
        sweep.Grid.from_yaml(path)
    assert str(info.value).startswith(f"grid file {str(path)!r}: {rule}")


def test_grid_from_python_is_validated_and_keeps_its_values() -> None:
    with pytest.raises(WorkbenchError, match=r"^grid: acc_bits\[0\]: must be an integer in "
                                             r"2\.\.64, got True$"):
        sweep.Grid(networks=["lenet5"], platforms=["idsp"], acc_bits=[True])
    grid = sweep.Grid(networks=["lenet5"], platforms=["idsp"], memory_kb=[64, 0.5])
    assert grid.memory_kb == [64, 0.5] and type(grid.memory_kb[0]) is int  # case ids stay put
    assert [c.memory_bytes for c in sweep.cases(grid)] == [65536, 512]


def test_weights_and_data_files(tmp_path: Path) -> None:
    net = layers.load_network("lenet5")
    conv1 = net["conv1"]
    w = np.zeros((conv1.Oc, conv1.Kc, conv1.Ky, conv1.Kx), np.float32)
    cases = {
        "strings.npz": {"conv1.weight": np.array(["a", "b"])},
        "nan.npz": {"conv1.weight": np.full(w.shape, np.nan, np.float32)},
        "bool.npz": {"conv1.bias": np.zeros(conv1.Oc, bool)},
    }
    for name, arrays in cases.items():
        np.savez(tmp_path / name, **arrays)
    np.save(tmp_path / "single.npy", w)
    good = tmp_path / "good.npz"
    np.savez(good, **{"conv1.weight": w})
    (tmp_path / "cut.npz").write_bytes(good.read_bytes()[:200])
    expected = {"strings.npz": "conv1.weight: must be a numeric (integer or float) array, got "
                               "<U1 array of shape [2]",
                "nan.npz": "conv1.weight: holds NaN or infinity",
                "bool.npz": "conv1.bias: must be a numeric",
                "single.npy": "a single .npy array, not an .npz archive",
                "cut.npz": "cannot read as .npz"}
    for name, rule in expected.items():
        with pytest.raises(FileFormatError) as info:
            load_npz(tmp_path / name, net)
        assert str(info.value).startswith(f"weights file {str(tmp_path / name)!r}: ")
        assert rule in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(SpecError, match=r"^weights file '.*good\.npz': conv2\.weight: no weights "
                                        r"for layer 'conv2'$"):
        load_npz(good, net)
    np.savez(good, **{"conv1.weight": w[:, :, :2]})
    with pytest.raises(SpecError, match=r"good\.npz': conv1\.weight: layer 'conv1' expects "
                                        r"weight shape \(32, 1, 5, 5\), file has \(32, 1, 2, 5\)"):
        load_npz(good, net)
    x = np.zeros((5, 1, 28, 28), np.float32)
    labels = np.arange(5)
    data = tmp_path / "data.npz"
    for arrays, rule in [
            ({"calib_x": x, "calib_y": labels.astype(float), "test_x": x, "test_y": labels},
             "calib_y: must be integer class labels (one dimension), got float64"),
            ({"calib_x": x, "calib_y": labels, "test_x": x, "test_y": labels[:4]},
             "test_y: holds 4 labels for 5 images in test_x"),
            ({"calib_x": x[:, :, :27], "calib_y": labels, "test_x": x, "test_y": labels},
             "calib_x: must be float images N×1×28×28, got float32 array of shape [5, 1, 27, 28]"),
            ({"calib_x": x[:0], "calib_y": labels[:0], "test_x": x, "test_y": labels},
             "calib_x: holds no images"),
            ({"calib_x": x, "calib_y": -labels, "test_x": x, "test_y": labels},
             "calib_y: must be non-negative class labels"),
            ({"calib_x": x}, "calib_y: is required")]:
        np.savez(data, **arrays)
        with pytest.raises(FileFormatError) as info:
            load_data_npz(data, net)
        assert str(info.value).startswith(f"data file {str(data)!r}: {rule}")
    np.savez(data, calib_x=x, calib_y=labels, test_x=x, test_y=labels, **{"conv1.weight": w})
    assert set(load_data_npz(data, net)) == {"calib_x", "calib_y", "test_x", "test_y"}
    calibration = load_data_npz(data, net, calibration_only=True)
    assert set(calibration) == {"calib_x", "calib_y"}
    assert np.array_equal(calibration["calib_y"], labels)


def test_platform_schema_is_the_platform_parts() -> None:
    """The part models are the file schema: every preset validates into them, and every
    single-level name's rule is the part field's, named by the name the user gave."""
    from workbench import platforms

    for name in platforms.list_platforms():
        path = ROOT / "data" / "platforms" / f"{name}.yaml"
        plat = platforms.Platform.model_validate(yaml.safe_load(path.read_text()))
        assert plat == platforms.load_platform(name)
    idsp = platforms.load_platform("idsp")
    for overrides, rule in [({"clock_mhz": float("nan")}, "clock_mhz: must be a number >= 0.001"),
                            ({"bus_elems_per_cycle": float("inf")}, "bus_elems_per_cycle: must"
                                                                    " be a number >= 1e-06"),
                            ({"simd_lanes": 2.5}, "simd_lanes: must be a whole number"),
                            ({"double_buffer": "yes"}, "double_buffer: must be true or false"),
                            ({"overflow": "clamp"}, "overflow: must be one of wrap, saturate")]:
        with pytest.raises(WorkbenchError, match=rule.replace("(", r"\(")):
            idsp.replace(**overrides)
    assert idsp.replace(elem_bytes=2.0).elem_bytes == 2
    with pytest.raises(FileFormatError, match=r"^platform file 'p\.yaml': memory: is required"):
        platforms.platform_from_dict({"name": "p", "clock_mhz": 1}, "p.yaml")


def test_schemas_import_nothing_above_the_spec_level() -> None:
    folder = ROOT / "workbench" / "schemas"
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("workbench"):
                assert node.module == "workbench.errors" or node.module.startswith(
                    "workbench.schemas"), (path.name, node.module)
    assert set(network_schema.ACTIVATIONS) == set(spec.ACTIVATIONS)
    assert set(network_schema.ELTWISE_OPS) == set(spec.ELTWISE_OPS)


def _dynamic_model(path: Path, batch: int | str = "N") -> Path:
    w = numpy_helper.from_array(np.zeros((8, 3, 3, 3), np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "dyn", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [batch, 3, "H", "W"])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], initializer=[w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_dynamic_onnx_needs_and_takes_an_input_shape(tmp_path: Path) -> None:
    path = _dynamic_model(tmp_path / "dyn.onnx")
    with pytest.raises(FileFormatError, match=r"input 'x' has a dynamic dimension 'H' at axis 2; "
                                              r"give a fixed input shape \(load_network\(\.\.\., "
                                              r"input_shape=\(C, H, W\)\)\)"):
        layers.load_network(path)
    net = layers.load_network(path, input_shape=(3, 32, 48))
    conv = net["conv"]
    assert (conv.in_shape, conv.out_shape, conv.On) == ((3, 32, 48), (8, 32, 48), 1)
    fixed = layers.load_network(_dynamic_model(tmp_path / "b4.onnx", batch=4),
                                input_shape=(3, 10, 12))
    assert fixed.batch == 4 and fixed["conv"].out_shape == (8, 10, 12)
    assert layers.load_network(path, batch=2, input_shape=[3, 8, 8])["conv"].On == 2
    for bad, rule in [((3, 32), r"input 'x' has rank 4; input_shape \(3, 32\) needs rank 3"),
                      ((3, 0, 8), "input_shape must be a tuple of positive integers"),
                      ((3, 2.5, 8), "input_shape must be a tuple of positive integers"),
                      ((4, 8, 8), "does not match 4 input maps")]:
        with pytest.raises(WorkbenchError, match=rule):
            layers.load_network(path, input_shape=bad)


def test_input_shape_for_yaml_and_prototxt(tmp_path: Path) -> None:
    net = layers.load_network("lenet5", input_shape=(1, 32, 32))
    assert net.layers[0].in_shape == (1, 32, 32)
    assert net.layers[0].out_shape != layers.load_network("lenet5").layers[0].out_shape
    proto = tmp_path / "n.prototxt"
    proto.write_text('name: "n"\n')
    with pytest.raises(WorkbenchError, match="input_shape applies to ONNX and YAML networks"):
        layers.load_network(proto, input_shape=(1, 8, 8))


def test_unknown_onnx_opset_is_refused(tmp_path: Path) -> None:
    path = _dynamic_model(tmp_path / "m.onnx", batch=1)
    model = onnx.load(str(path))
    model.opset_import[0].version = 999
    onnx.save(model, str(path))
    with pytest.raises(FileFormatError, match=r"unknown opset 999 \(this onnx .* knows opsets "
                                              r"1\.\.\d+\)"):
        layers.load_network(path, input_shape=(3, 8, 8))


@pytest.mark.parametrize("body, error, rule", [
    ('input: "data"\ninput_shape: 5\n', FileFormatError, "input_shape must be a { dim: ... }"),
    ('input: "data"\ninput_dim: 1\ninput_dim: 3\ninput_dim: "x"\ninput_dim: 8\n',
     FileFormatError, "input needs 4 positive integer dims (N, C, H, W), got [1, 3, 'x', 8]"),
    ('input: "data"\ninput_shape { dim: 1 dim: 3 dim: 8 dim: 8 }\nlayer { name: "n" type: "LRN" '
     'bottom: "data" top: "n" lrn_param { beta: nan } }\n', SpecError,
     "layer 'n': lrn_param.beta must be a finite number, got nan"),
    ('input: "data"\ninput_shape { dim: 1 dim: 3 dim: 8 dim: 8 }\nlayer { name: "c" '
     'type: "Convolution" bottom: "data" top: "c" convolution_param: 3 }\n', SpecError,
     "prototxt layer 'c' (Convolution): convolution_param must be a { ... } block of fields, "
     "got 3"),
])
def test_prototxt_values_of_the_wrong_type(tmp_path: Path, body: str, error: type,
                                           rule: str) -> None:
    path = tmp_path / "n.prototxt"
    path.write_text(body)
    with pytest.raises(error) as info:
        layers.load_network(path)
    assert str(info.value).startswith(f"prototxt {str(path)!r}: ") and rule in str(info.value)

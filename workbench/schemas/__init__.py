"""Schemas of the documents users write (network YAML, sweep grid, platform YAML, weights and
data .npz contents): pydantic v2 models whose every error becomes one WorkbenchError line
naming the file, the field path (`layers[3].alpha`) and the rule.

A spec-level package: it imports `workbench.errors` only; the loaders (layers.builder,
sweep.grid, quant.weights, platforms) call it.
"""

from workbench.schemas.base import StrictModel, field_path, message, validate

__all__ = ["StrictModel", "field_path", "message", "validate"]

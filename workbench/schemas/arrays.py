"""Schemas of the .npz contents users give: trained weights ("<layer>.weight",
"<layer>.bias") and calibration/test data (`calib_x`, `calib_y`, `test_x`, `test_y`).

Arrays must be numeric (weights: integer or float, finite; images: float, finite, N×C×H×W with
the network's C×H×W, passed as context `image_shape`; labels: non-negative integers, one per
image). Other arrays in the same file are ignored (a data file may also hold the weights).
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import ConfigDict, PlainValidator, RootModel, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from workbench.errors import FileFormatError
from workbench.schemas.base import StrictModel, validate

DATA_KEYS = ("calib_x", "calib_y", "test_x", "test_y")


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} array of shape {list(value.shape)}"
    return type(value).__name__


def _numeric(value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iuf":
        raise PydanticCustomError("array_rule", "must be a numeric (integer or float) array, "
                                  f"got {_describe(value)}")
    if value.dtype.kind == "f" and not np.isfinite(value).all():
        raise PydanticCustomError("array_rule", f"holds NaN or infinity ({_describe(value)})")
    return value


def _images(value: Any, info: ValidationInfo) -> np.ndarray:
    shape = tuple((info.context or {}).get("image_shape") or ())
    wanted = "N×" + "×".join(map(str, shape)) if shape else "N×C×H×W"
    if (not isinstance(value, np.ndarray) or value.dtype.kind != "f" or value.ndim != 4
            or (shape and tuple(value.shape[1:]) != shape)):
        raise PydanticCustomError("array_rule", f"must be float images {wanted}, got "
                                  f"{_describe(value)}")
    if len(value) == 0:
        raise PydanticCustomError("array_rule", "holds no images")
    if not np.isfinite(value).all():
        raise PydanticCustomError("array_rule", "holds NaN or infinity")
    return value


def _labels(value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iu" or value.ndim != 1:
        raise PydanticCustomError("array_rule", "must be integer class labels (one "
                                  f"dimension), got {_describe(value)}")
    if len(value) and value.min() < 0:
        raise PydanticCustomError("array_rule", "must be non-negative class labels")
    return value


Numeric = Annotated[Any, PlainValidator(_numeric)]
Images = Annotated[Any, PlainValidator(_images)]
Labels = Annotated[Any, PlainValidator(_labels)]


class WeightArrays(RootModel[dict[str, Numeric]]):
    """Every "<layer>.weight" and "<layer>.bias" array of a weights file."""


class _Split(StrictModel):
    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)

    @staticmethod
    def _one_per_image(labels: Any, images: Any, key: str) -> Any:
        if labels is not None and images is not None and len(labels) != len(images):
            raise PydanticCustomError("cross_rule", f"holds {len(labels)} labels for "
                                      f"{len(images)} images in {key}")
        return labels


class DataArrays(_Split):
    """Calibration and test data of the quantization search (all four arrays)."""

    calib_x: Images
    calib_y: Labels
    test_x: Images
    test_y: Labels

    @field_validator("calib_y", "test_y")
    @classmethod
    def _matches(cls, labels: Any, info: ValidationInfo) -> Any:
        key = info.field_name.replace("_y", "_x")
        return cls._one_per_image(labels, info.data.get(key), key)


class CalibrationArrays(_Split):
    """Calibration images, labels optional (the quantized-model path)."""

    calib_x: Images
    calib_y: Labels | None = None

    @field_validator("calib_y")
    @classmethod
    def _matches(cls, labels: Any, info: ValidationInfo) -> Any:
        return cls._one_per_image(labels, info.data.get("calib_x"), "calib_x")


def validate_weights(arrays: dict[str, Any], origin: str) -> dict[str, np.ndarray]:
    """The weight, bias and PReLU slope arrays of `arrays` (others ignored), checked numeric
    and finite."""
    chosen = {k: v for k, v in arrays.items() if k.endswith((".weight", ".bias", ".slope"))}
    return validate(WeightArrays, chosen, origin, FileFormatError).root


def validate_data(arrays: dict[str, Any], origin: str, image_shape: tuple[int, ...] | None,
                  calibration_only: bool = False) -> dict[str, np.ndarray]:
    """The data arrays of `arrays` checked (images of `image_shape` C×H×W); a dict of the
    arrays the schema names (calib_y None when absent and optional)."""
    schema = CalibrationArrays if calibration_only else DataArrays
    doc = validate(schema, arrays, origin, FileFormatError,
                   context={"image_shape": image_shape})
    return {name: getattr(doc, name) for name in type(doc).model_fields}

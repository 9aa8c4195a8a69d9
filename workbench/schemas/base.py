"""Shared pieces of the document schemas: a strict model base, value types with one-line rules,
and the conversion of pydantic's ValidationError into one WorkbenchError line.

Every message reads `<origin>: <field path>: <rule>, got <value>`, with the field path written
the way a user finds it in the file: `layers[3].alpha`, `overrides.cores[0]`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, NoReturn, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, PlainValidator, ValidationError
from pydantic_core import PydanticCustomError

from workbench.errors import WorkbenchError

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)
SHOWN = 60  # characters of an offending value shown in a message
MAX_INT = 2**53 - 1  # sizes and counts stay exact in floating point (and far from int64's end)
TOO_LARGE = "must be at most 2^53 - 1"


class StrictModel(BaseModel):
    """A document part: unknown keys refused, no coercion (2.5 is not an int, "3" is not a
    number, true is not 1), NaN and infinity refused for floats."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True,
                              populate_by_name=False)


def _rule(kind: str, text: str) -> PydanticCustomError:
    return PydanticCustomError(kind, text)


def is_int(value: Any) -> bool:
    """A true integer (bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _int_at_least(least: int, rule: str) -> Any:
    def check(value: Any) -> int:
        if not is_int(value) or value < least:
            raise _rule("int_rule", rule)
        if value > MAX_INT:
            raise _rule("int_rule", TOO_LARGE)
        return value
    return PlainValidator(check)


def _finite(least: float | None = None, strict_least: bool = False, rule: str = "") -> Any:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _rule("number_rule", rule or "must be a finite number")
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float range
            raise _rule("number_rule", "must be a finite number") from None
        if not math.isfinite(number):
            raise _rule("number_rule", "must be a finite number (no NaN or infinity)")
        if least is not None and (number < least or (strict_least and number == least)):
            raise _rule("number_rule", rule)
        return number
    return PlainValidator(check)


def int_in(low: int, high: int) -> Any:
    """An integer in low..high."""
    def check(value: Any) -> int:
        if not is_int(value) or not low <= value <= high:
            raise _rule("int_rule", f"must be an integer in {low}..{high}")
        return value
    return PlainValidator(check)


def _unique(values: list[Any]) -> list[Any]:
    seen: set[str] = set()
    for value in values:
        key = repr(value)
        if key in seen:
            raise _rule("unique_rule", f"lists a value twice ({shown(value)})")
        seen.add(key)
    return values


Unique = AfterValidator(_unique)  # a list that holds no value twice


def one_of(choices: Iterable[str]) -> Any:
    """A string among `choices`."""
    allowed = tuple(choices)

    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise _rule("choice_rule", "must be one of " + ", ".join(allowed))
        return value
    return PlainValidator(check)


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _rule("text_rule", "must be a non-empty string")
    return value


PositiveInt = Annotated[int, _int_at_least(1, "must be a positive integer")]
NonNegativeInt = Annotated[int, _int_at_least(0, "must be a non-negative integer")]
FiniteFloat = Annotated[float, _finite()]
PositiveFloat = Annotated[float, _finite(0, True, "must be a finite number > 0")]
NonNegativeFloat = Annotated[float, _finite(0, False, "must be a finite number >= 0")]
Text = Annotated[str, PlainValidator(_text)]


def field_path(loc: Loc) -> str:
    """('layers', 3, 'alpha') → 'layers[3].alpha'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(document)"


def shown(value: Any) -> str:
    """A short, one-line repr of an offending value."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails is still named
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


# rules whose text states the offending value (no ", got ..." appended)
SELF_DESCRIBED = {"missing", "extra_forbidden", "too_short", "groups_rule", "table_rule",
                  "size_rule", "kernel_rule", "unique_rule", "cross_rule", "array_rule",
                 "bank_rule"}
_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "unknown key",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "finite_number": "must be a finite number (no NaN or infinity)",
    "invalid_key": "keys must be strings",
}


def rule_of(error: Mapping[str, Any]) -> str:
    """Our wording of one pydantic error (without the field path)."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "too_short":
        rule = ("must not be empty" if ctx.get("min_length") == 1
                else f"must have at least {ctx.get('min_length')} items")
    elif kind == "too_long":
        rule = f"must have at most {ctx.get('max_length')} items"
    elif kind in _MESSAGES:
        rule = _MESSAGES[kind]
    elif kind.endswith("_rule"):  # ours: already in our words
        rule = str(error.get("msg", kind))
    else:
        rule = str(error.get("msg", kind)).removeprefix("Value error, ")
        rule = rule[:1].lower() + rule[1:]
    if kind not in SELF_DESCRIBED and "input" in error:
        rule += f", got {shown(error['input'])}"
    return " ".join(rule.split())


def message(origin: str, loc: Loc, rule: str, more: int = 0, note: str = "") -> str:
    """One line: origin, field path, rule (and how many further problems there are)."""
    extra = f" ({note})" if note else ""
    rest = f" [+{more} more problem{'s' if more > 1 else ''}]" if more else ""
    return " ".join(f"{origin}: {field_path(loc)}: {rule}{extra}{rest}".split())


def fail(origin: str, loc: Loc, rule: str, error: type[WorkbenchError] = WorkbenchError,
         note: str = "") -> NoReturn:
    """Raise one line naming the origin, the field path and the rule."""
    raise error(message(origin, loc, rule, note=note))


def first_problem(exc: ValidationError, prefix: Loc = ()) -> tuple[Loc, str, int]:
    """(field path, rule, number of further problems) of a ValidationError."""
    errors = exc.errors(include_url=False)
    first = min(errors, key=lambda e: e["type"] not in ("extra_forbidden", "invalid_key"))
    return (*prefix, *first["loc"]), rule_of(first), len(errors) - 1


def known_keys(schema: type[BaseModel]) -> list[str]:
    """The keys a document part may have (aliases where a field has one)."""
    return [info.alias or name for name, info in schema.model_fields.items()]


def validate(schema: type[M], doc: Any, origin: str, error: type[WorkbenchError],
             prefix: Loc = (), context: dict[str, Any] | None = None, note: str = "") -> M:
    """`schema` validated from `doc`; any problem is one `error` line (never pydantic's)."""
    try:
        return schema.model_validate(doc, context=context)
    except ValidationError as exc:
        loc, rule, more = first_problem(exc, prefix)
        if rule == "unknown key" and len(loc) == len(prefix) + 1:
            rule += "; known: " + ", ".join(sorted(known_keys(schema)))
        raise error(message(origin, loc, rule, more, note)) from None
    except RecursionError:
        raise error(f"{origin}: {field_path(prefix)}: nested too deeply") from None

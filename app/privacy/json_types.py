"""JSON's own types for numbers and booleans in request bodies and method parameters.

Pydantic's lax mode converts across JSON types: ``true`` became the number 1 (``{"epsilon":
true}`` asked for ε = 1, ``{"k": true}`` for k = 1), ``"3"`` the number 3, and ``1`` or
``"yes"`` the boolean true, although the OpenAPI document declares a number or a boolean
there (found by the schema fuzzer). Strict mode would also refuse the strings that JSON uses
for UUIDs, enums and tuples, so only this confusion is refused: a boolean or a string where a
number is declared, anything but true/false where a boolean is. Everything else is left to
pydantic's validation.
"""

from __future__ import annotations

import datetime
import functools
import types
import uuid
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

_SEQUENCES = (list, tuple, set, frozenset)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    return "an array" if isinstance(value, (list, tuple)) else "an object"


def _involves_scalars(tp: Any) -> bool:
    """Whether a number or a boolean is declared anywhere in ``tp`` (models excepted: they
    check their own fields; so are a Literal's values)."""
    try:
        return _involves_scalars_cached(tp)
    except TypeError:  # an annotation that cannot be hashed
        return _involves_scalars_cached.__wrapped__(tp)


@functools.lru_cache(maxsize=None)
def _involves_scalars_cached(tp: Any) -> bool:
    if tp in (bool, int, float):
        return True
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return _involves_scalars(args[0])
    if origin is Literal:
        return False
    return any(_involves_scalars(a) for a in args if a is not ...)


def problem(tp: Any, value: Any) -> str | None:
    """What is wrong with ``value``'s JSON type under the annotation ``tp`` (None: nothing
    this module checks — no number or boolean is declared in ``tp``, or the value fits)."""
    if value is None or not _involves_scalars(tp):
        return None
    return _problem(tp, value)


def _problem(tp: Any, value: Any) -> str | None:
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return _problem(args[0], value)
    if origin in (Union, types.UnionType):  # fine when one member is; else the most specific
        found = [_problem(a, value) for a in args]
        if any(p is None for p in found):
            return None
        return next((p for p in found if not p.startswith("must be")), found[0])
    if tp is bool:
        return None if isinstance(value, bool) else f"must be true or false, not {_json_kind(value)}"
    if tp in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a number, not {_json_kind(value)}"
        return None
    if origin in _SEQUENCES:
        if not isinstance(value, (list, tuple)):
            return f"must be an array, not {_json_kind(value)}"
        if not _involves_scalars(tp):
            return None
        inner = args if origin is tuple and args and args[-1] is not ... else args[:1] * len(value)
        for i, (a, v) in enumerate(zip(inner, value)):
            if (p := _problem(a, v)) is not None:
                return f"item {i} {p}"
        return None
    if origin is dict or (isinstance(tp, type) and issubclass(tp, BaseModel)):
        if not isinstance(value, dict):
            return f"must be an object, not {_json_kind(value)}"
        if origin is dict and _involves_scalars(args[1]):
            for k, v in value.items():
                if (p := _problem(args[1], v)) is not None:
                    return f"{k!r} {p}"
        return None
    return _leaf(tp, origin, args, value)


def _leaf(tp: Any, origin: Any, args: tuple, value: Any) -> str | None:
    """The members a union of numbers may hold beside them: null, strings, literals."""
    if tp is type(None):
        return "must be null"
    if origin is Literal:
        if any(value == a and type(value) is type(a) for a in args):
            return None
        return f"must be one of {', '.join(map(repr, args))}"
    if tp is str or (isinstance(tp, type) and issubclass(tp, (uuid.UUID, datetime.date))):
        return None if isinstance(value, str) else f"must be a string, not {_json_kind(value)}"
    return None


def _check_field(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    field = cls.model_fields.get(info.field_name or "")
    if field is not None and (p := problem(field.annotation, value)) is not None:
        raise PydanticCustomError("json_type", p)
    return value


def json_typed(*fields: str):
    """The check as a validator of the named fields, for a model that cannot take it on every
    field (a discriminated union's tag refuses a before-validator)."""
    return field_validator(*fields, mode="before")(classmethod(_check_field))


class JsonTyped(BaseModel):
    """Base of every request body and method parameter model: see the module."""

    _json_types = json_typed("*")


def schema_bounds(*, types_: tuple[str, ...] = ("number", "integer"), **bounds: float):
    """A field's ``json_schema_extra`` when a validator bounds its numbers with a message of its
    own (naming the column or the rule): the JSON Schema states the same bounds (``minimum``,
    ``exclusiveMaximum``, …) on every number of the field — the field itself, a list's items, a
    map's values, each branch of a union — so a client reading GET /v1/methods knows them."""
    def apply(schema: dict[str, Any]) -> None:
        if schema.get("type") in types_:
            schema.update(bounds)
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                apply(schema[key])
        for branch in schema.get("anyOf", []):
            apply(branch)
    return apply

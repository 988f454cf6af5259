"""A small validator for the subset of JSON Schema that tool input schemas use.

Why not `jsonschema`: the tools need a dozen keywords, the messages must name the field for the
model, and an unknown keyword in a tool's schema should fail when the tool is registered (so a
worker finds out at start-up), not silently pass at call time.

Supported keywords: `type` (object, string, integer, number, boolean, array, null, or a list of
them), `properties`, `required`, `additionalProperties` (a bool; **absent means False**: the model
sending a key a tool does not declare is refused), `items`, `enum`, `minLength`, `maxLength`,
`pattern`, `minimum`, `maximum`, `minItems`, `maxItems`; annotations (`description`, `title`,
`default`, `examples`) are ignored. A string without `maxLength` is capped at `DEFAULT_MAX_STRING`.
"""

from __future__ import annotations

import re
from typing import Any

DEFAULT_MAX_STRING = 2_000_000
"""Cap on any string argument whose schema sets no `maxLength`: a guard, not a budget."""

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "null": (type(None),),
}
_CHECKED = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "minLength",
    "maxLength", "pattern", "minimum", "maximum", "minItems", "maxItems",
}
_ANNOTATIONS = {"description", "title", "default", "examples", "$schema"}


class SchemaViolation(ValueError):
    """Arguments do not match the schema. `field` is a path like `argv[2]` ("" for the root)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"'{field}' {message}" if field else f"the arguments {message}")


def check_schema(schema: dict[str, Any], where: str = "") -> None:
    """Raise ValueError when `schema` uses a keyword this validator does not implement."""
    if not isinstance(schema, dict):
        raise ValueError(f"schema at {where or 'root'} must be a dict")
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    if unknown:
        raise ValueError(
            f"schema at {where or 'root'} uses unsupported keyword(s) {sorted(unknown)}; "
            f"supported: {sorted(_CHECKED)}"
        )
    types = schema.get("type")
    for t in [types] if isinstance(types, str) else (types or []):
        if t not in _TYPES:
            raise ValueError(f"schema at {where or 'root'} has unknown type {t!r}")
    if "pattern" in schema:
        re.compile(schema["pattern"])
    if not isinstance(schema.get("additionalProperties", False), bool):
        raise ValueError(f"schema at {where or 'root'}: additionalProperties must be a bool")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{where}.{name}" if where else name)
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")


def _type_name(value: Any) -> str:
    for name, py in _TYPES.items():
        if isinstance(value, bool) and name != "boolean":
            continue
        if isinstance(value, py):
            return name
    return type(value).__name__


def _is_type(value: Any, t: str) -> bool:
    if isinstance(value, bool):
        return t == "boolean"
    return isinstance(value, _TYPES[t])


def validate(value: Any, schema: dict[str, Any], field: str = "") -> None:
    """Raise `SchemaViolation` naming the first field of `value` that `schema` refuses."""
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_is_type(value, t) for t in allowed):
            raise SchemaViolation(field, f"must be {' or '.join(allowed)}, got {_type_name(value)}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaViolation(field, f"must be one of {schema['enum']}, got {value!r}")
    if isinstance(value, str):
        cap = schema.get("maxLength", DEFAULT_MAX_STRING)
        if len(value) > cap:
            raise SchemaViolation(field, f"is {len(value)} characters long; the limit is {cap}")
        if len(value) < schema.get("minLength", 0):
            raise SchemaViolation(field, f"must be at least {schema['minLength']} character(s) long")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            raise SchemaViolation(field, f"does not match the pattern {schema['pattern']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaViolation(field, f"must be >= {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaViolation(field, f"must be <= {schema['maximum']}, got {value}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise SchemaViolation(field, f"must have at least {schema['minItems']} item(s)")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaViolation(field, f"has {len(value)} items; the limit is {schema['maxItems']}")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], f"{field}[{i}]")
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                raise SchemaViolation(_join(field, key), "is required")
        if not schema.get("additionalProperties", False):
            extra = sorted(k for k in value if k not in props)
            if extra:
                raise SchemaViolation(
                    _join(field, str(extra[0])), f"is not a known argument; known: {sorted(props) or 'none'}"
                )
        for key, sub in props.items():
            if key in value:
                validate(value[key], sub, _join(field, key))


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key

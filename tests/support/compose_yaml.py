"""A small reader for the YAML subset `docker-compose.yml` uses, so that a test can check what the
compose file gives each service without a docker engine or PyYAML (neither is a dependency).

Handled: comments, block mappings, block sequences (`- item`), anchors on a mapping (`key: &name`)
and aliases as values (`key: *name`), the `<<: *name` merge key, flow sequences kept as raw text,
quoted and plain scalars, and block scalars (`|`, `>`, `>-`), whose lines are joined. Anything
else raises, so the test cannot pass on a file it misread. `interpolate` does compose's
`${VAR}`, `${VAR:-default}` and `${VAR:?error}` first, as compose does.
"""

from __future__ import annotations

import re
from typing import Any

KEY = re.compile(r"^(?P<key>[A-Za-z0-9_.<-]+|\"[^\"]*\"):(?:\s+(?P<value>.*))?$")


INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:[-?])(?P<arg>[^}]*))?\}")


def interpolate(text: str, environ: dict[str, str]) -> str:
    """`text` with compose's variable references replaced from `environ` (`$$` stays a `$`).

    Raises:
        KeyError: a `${VAR:?message}` whose variable is unset or empty (compose refuses to start).
    """

    def one(m: re.Match[str]) -> str:
        value = environ.get(m["name"], "")
        if m["op"] == ":?" and not value:
            raise KeyError(f"{m['name']}: {m['arg']}")
        return value or (m["arg"] if m["op"] == ":-" else "")

    return "$".join(INTERPOLATION.sub(one, part) for part in text.split("$$"))


def _strip_comment(line: str) -> str:
    out, quote = [], ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            break
        out.append(ch)
    return "".join(out).rstrip()


def _scalar(text: str, anchors: dict[str, Any]) -> Any:
    text = text.strip()
    if text.startswith("*"):
        return anchors[text[1:]]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse(text: str) -> dict[str, Any]:
    """The document's top-level mapping."""
    lines = [(len(raw) - len(raw.lstrip(" ")), raw.strip(), raw) for raw in text.splitlines()]
    anchors: dict[str, Any] = {}
    pos = 0

    def skip_blank() -> None:
        nonlocal pos
        while pos < len(lines) and not _strip_comment(lines[pos][2]).strip():
            pos += 1

    def block_scalar(parent_indent: int) -> str:
        nonlocal pos
        parts = []
        while pos < len(lines) and (not lines[pos][1] or lines[pos][0] > parent_indent):
            parts.append(lines[pos][1])
            pos += 1
        return " ".join(p for p in parts if p)

    def node(indent: int) -> Any:
        skip_blank()
        if pos >= len(lines) or lines[pos][0] < indent:
            return None
        first = _strip_comment(lines[pos][2]).strip()
        return sequence(lines[pos][0]) if first.startswith("- ") or first == "-" else mapping(lines[pos][0])

    def value_after(value: str | None, indent: int) -> Any:
        nonlocal pos
        if value is None or value == "":
            return node(indent + 1)
        if value.startswith("&"):
            name, _, rest = value.partition(" ")
            found = value_after(rest or None, indent)
            anchors[name[1:]] = found
            return found
        if value in ("|", ">", ">-", "|-"):
            return block_scalar(indent)
        if value.startswith("{"):
            raise ValueError(f"flow mappings are not read here: {value!r}")
        return _scalar(value, anchors)

    def mapping(indent: int) -> dict[str, Any]:
        nonlocal pos
        out: dict[str, Any] = {}
        while True:
            skip_blank()
            if pos >= len(lines) or lines[pos][0] < indent:
                return out
            if lines[pos][0] > indent:
                raise ValueError(f"unexpected indentation at line {pos + 1}: {lines[pos][2]!r}")
            line = _strip_comment(lines[pos][2]).strip()
            m = KEY.match(line)
            if m is None:
                raise ValueError(f"not a mapping entry at line {pos + 1}: {lines[pos][2]!r}")
            pos += 1
            key = _scalar(m["key"], anchors)
            value = value_after(m["value"], indent)
            if key == "<<":
                out = {**value, **out}
            else:
                out[key] = value

    def sequence(indent: int) -> list[Any]:
        nonlocal pos
        out: list[Any] = []
        while True:
            skip_blank()
            if pos >= len(lines) or lines[pos][0] != indent:
                return out
            line = _strip_comment(lines[pos][2]).strip()
            if not line.startswith("-"):
                return out
            pos += 1
            item = line[1:].strip()
            if KEY.match(item):
                raise ValueError(f"mappings inside sequences are not read here: line {pos}")
            out.append(value_after(item or None, indent) if item in ("", ">", ">-", "|", "|-") else _scalar(item, anchors))

    doc = mapping(0)
    skip_blank()
    if pos != len(lines):
        raise ValueError(f"could not read line {pos + 1}: {lines[pos][2]!r}")
    return doc

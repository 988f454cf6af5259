"""Atomic facts: a line that states many facts ("KEY=VALUE; KEY=VALUE; ...", "key: value, key:
value, ...", "A -> B, C -> D") read as one unit per pair.

Why (issue 25, causes 1 and 7): read as one unit, a line of sixty pairs had one key (all sixty
keys), so a later `KEY=NEW` for one of them could not supersede that pair alone, and the line was
cut at `facts.MAX_UNIT_CHARS` with "…": everything after the cut was gone from the ledger. One
unit per pair gives each its own subject, so each is selected, superseded and recalled on its own,
and none is cut.

A header scopes its pairs when it names something ("billing-svc config: port=8443; ...") or types
them ("HARD CONSTRAINT: MAX_SPEND=500; ..."): the pair is then said under it ("billing-svc:
port=8443"), so two services' `port` pairs do not share a subject. A header that only says what
follows ("Authoritative records:", "ROUTING TABLE") is not repeated on each pair.

A line indented under one that names something and ends with a colon (YAML's "orders-api:" then
"  port: 8443") is said under those names too ("orders-api: port: 8443"), one level deep.

Conservative: a line splits only when *every* part separated by `;`, `,` or `|` is a pair of one
syntax (two at least; three for `key: value`, which prose uses more), so a sentence with a colon
or an arrow stays whole. Linear in the line, no model.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from longrun.context import kinds

_EQ = re.compile(r"^[A-Za-z_][\w.\-/\[\]]{0,80}(?: [A-Za-z_][\w.\-/\[\]]{0,40}){0,2}\s*=\s*\S.*$")
"""KEY=VALUE, the key up to three words ("orders-api timeout=30s")."""
_ENV = re.compile(r"[A-Za-z_][\w.\-]{0,80}=\S+")
"""KEY=VALUE without a space in it: a line of them separated by spaces is an env line
("ORDERS_API_PORT=8080 BILLING_PORT=9000")."""
_ARROW = re.compile(r"^\S.{0,120}?\s*(?:->|=>|→)\s*\S.*$")
_COLON = re.compile(r"^[A-Za-z][\w.\-/ ]{0,40}?\s*:\s+[^:\s][^:]*$")
_STYLES: tuple[tuple[re.Pattern[str], int], ...] = ((_EQ, 2), (_ARROW, 2), (_COLON, 3))
"""Each pair syntax with the fewest pairs a line must hold to be split by it."""
_HEAD = re.compile(r"^(?P<head>[^=:→]{1,80}?)\s*:\s+(?P<rest>\S.*)$")
_SCOPE_NAME = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+\b|\b[A-Za-z]+\d+[A-Za-z0-9]*\b|(?:[\w.-]+/)+[\w.-]+")
"""Names a header scopes its pairs with (billing-svc, eu-west-2, node7, config/app.yaml)."""
MAX_HEADER_CHARS = 80
_WHERE_FROM = re.compile(r"(?:config|file|dir|directory|path|location)", re.I)
"""Attribute words a header says of where its pairs come from ("Config dump:", "From the env
file:"), not of what each pair is: not repeated on each pair."""


def header_like(line: str) -> bool:
    """A short line that introduces what follows ("ROUTING TABLE", "Authoritative records:")."""
    if len(line) > MAX_HEADER_CHARS:
        return False
    body = line.strip("#*_ ")
    return body.endswith(":") or (body.upper() == body and any(c.isalpha() for c in body))


def scope(header: str, attribute: Callable[[str], bool] = lambda w: False) -> str:
    """What a header adds to each of its pairs: its names, or itself when it types them (a rule,
    a decision, a status or a preference), or the attribute words it says of them ("Updated
    ports:" gives "ports"; `attribute` says which words are: `facts.attribute_word`, passed in
    because facts imports this module); "" when it only announces them."""
    h = header.strip("#*_ ").rstrip(":").strip()
    if not h:
        return ""
    names = _SCOPE_NAME.findall(h)
    if names:
        return " ".join(dict.fromkeys(names))
    label, _ = kinds.strip_label(h + ": x")
    if (label and kinds.classify("x", label=label) != "value") or kinds.RULE.search(h):
        return h
    # "Updated ports: A=8443, B=9090": each pair says a port, or it supersedes no "A port: 8080"
    said = [w for w in re.findall(r"[A-Za-z]+", h) if attribute(w.lower()) and not _WHERE_FROM.match(w)]
    return " ".join(said)


def nests(line: str) -> str:
    """The names a line opens a nested block for ("orders-api:" in YAML, "billing-svc settings:"),
    "" for any other line: the lines indented under it say things of them (`child`)."""
    if not line.endswith(":") or len(line) > MAX_HEADER_CHARS:
        return ""
    return " ".join(dict.fromkeys(_SCOPE_NAME.findall(line[:-1])))


def child(line: str, names: str) -> str | None:
    """A single `key: value` or `key=value` line indented under a line that names something
    (`nests`), said under those names, so its value keeps its subject; None for another line."""
    if not (_COLON.match(line) or _EQ.match(line)):
        return None
    return f"{names}: {line}"


def pairs(line: str, header: str = "", attribute: Callable[[str], bool] = lambda w: False) -> list[str]:
    """The pairs `line` states, one text each (under its header's scope, `scope`), or [] when the
    line is not a line of pairs. `header` is the line before it, if that one introduced it."""
    tokens = line.split()
    if len(tokens) >= 2 and all(_ENV.fullmatch(t) for t in tokens):
        said = scope(header, attribute)
        return [f"{said}: {t}" if said else t for t in tokens]
    for sep in (";", ",", "|"):
        if line.count(sep) < 1:
            continue
        segs = [s.strip() for s in line.split(sep)]
        while segs and not segs[-1].strip(" ."):
            segs.pop()
        if len(segs) < 2:
            continue
        segs[-1] = segs[-1].rstrip(".").rstrip()
        for rx, least in _STYLES:
            if len(segs) < least:
                continue
            head, first = "", segs[0]
            if not rx.match(first):
                m = _HEAD.match(first)
                if not m or not rx.match(m.group("rest")):
                    continue
                head, first = m.group("head"), m.group("rest")
            if all(rx.match(s) for s in segs[1:]):
                said = scope(head, attribute) if head else scope(header, attribute)
                return [f"{said}: {s}" if said else s for s in (first, *segs[1:])]
    return []

"""The value place of a fact line: the identifier a line states *of* its subject, not the subject.

Why (issue 25, zero superseded values presented as current): "tundra-stock flag:
ff_reports_opal_xy0 (provisional)" and a later "tundra-stock flag: ff_ingest_ochre_eyy" are one fact
with two values, but the fact analysis (`facts.analyse`) read every identifier as a name the line is
about, so each line had its own subjects and key, the later one replaced nothing, and the
provisional value stayed in the ledger as current. A number or a path in that place was already a
value; an identifier is one too when it stands where the value stands:

- after `KEY=` (`DEFAULT_REGION=eu-west-2`, `orders.datasource = pg-main-3`);
- after `subject attribute:` (`orders-api primary database: pg-main-3`), `... is`/`are`
  (`The release branch of mobile-app is rel-4-2.`) or in a table row's last cell
  (`| T-14 | reviewer | dana-k |`), when the part before it names a subject and says something
  of it (`facts`: a label, "Blocked: T-14", or a bare name, "orders-api: pg-main-3", does not);
- as one token, followed at most by a remark in parentheses and a few plain words
  ("(provisional)", ", may change", "for now"). A token directly followed by "(" is a call.

Split from `facts.py` by job (its size). Tests: tests/test_facts_value_slot.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_MOVED = r"(?:changed|moved|switched|set|updated|bumped|pushed|repointed|re-pointed|migrated)"
"""The verbs of "Primary region changed to eu-west-1": the value place after "<verb> to" (`TO`)."""
_SLOT = re.compile(
    r"(?P<sep>\s*:\s+|\s*=\s*|\s+(?:is|are)\s+|\s*\|\s*"
    r"|\s+(?:(?:is|are|was|were|has been|have been|got)\s+)?(?:now\s+)?" + _MOVED + r"\s+to\s+)(?:now\s+)?"
    r"(?P<value>[A-Za-z](?:[\w.:-]*[A-Za-z0-9])?)"
    r"(?P<trail>(?:\s+\([^()]*\))?(?:\s*[,;]?\s+[a-z][a-z' ]*)?\s*[.!|]?\s*)$"
)
_CHARS = re.compile(r"[:=|]|\s(?:is|are)\s|(?:ed|set) to\s")
"""What a line needs for `_SLOT` to match anywhere (most lines have none: not searched)."""
ATTRIBUTE_NAMES = frozenset(("md5", "sha1", "sha256", "sha512", "crc32", "on-call", "ipv4", "ipv6", "p50", "p95", "p99",
                             "utf-8", "x86_64", "arm64", "k8s"))
"""Names that look like identifiers but say what, not who: never a fact's subject (nor its value)."""


TO = "to"
"""The separator `find` names for a value after a verb that says it changed ("region changed to
eu-west-1"): taken as a value only after attribute words, never after a name (`facts`), since
"checkout-web switched to pay-v2" is a relation between two names."""


def find(text: str, ident: re.Pattern[str], name: re.Pattern[str],
         hexa: re.Pattern[str]) -> tuple[str, str, tuple[int, int]] | None:
    """(the head before the value place, its separator ":", "=", "is", "|" or `TO`; the identifier's span)
    when `text` ends in a value place holding one identifier (`ident` or `name`, not a hash `hexa`),
    else None. Whether the head makes it a value is the caller's (`facts`) to decide."""
    if not _CHARS.search(text):
        return None
    m = _SLOT.search(text)
    if m is None:
        return None
    value, head, sep = m.group("value"), text[: m.start()], m.group("sep").strip()
    sep = TO if sep.endswith(" to") else sep
    if not (ident.fullmatch(value) or name.fullmatch(value)) or value.lower() in ATTRIBUTE_NAMES or hexa.fullmatch(value):
        return None
    if not head.strip(" |*-") or not (head[-1].isalnum() or head[-1] in "_])`"):
        return None
    if sep == "|":
        head = head.lstrip()
        head = head[1:] if head.startswith("|") else head
        if head.count("|") != 1:
            return None  # only a three-cell row reads as subject | attribute | value
    return head, sep, m.span("value")


def identifiers(values: Iterable[str], ident: re.Pattern[str], name: re.Pattern[str]) -> bool:
    """Every value is a bare identifier (what `find` takes), none a number, date, path or address."""
    return all(ident.fullmatch(v) or name.fullmatch(v) for v in values)

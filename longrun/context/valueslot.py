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
- after "to" in a setting said by its verb ("Set LOG_LEVEL to INFO", "We renamed the default
  branch to main"), and a switch set by its verb ("Turn new_checkout off", "Disable caching"):
  `SET`. A log level or a switch's state (`ENUM_VALUES`) is a value in any of these places.

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
LEVELS = frozenset(("trace", "debug", "info", "notice", "warn", "warning", "error", "fatal", "critical"))
SWITCHES = frozenset(("on", "off", "enabled", "disabled", "enable", "disable", "true", "false"))
ENUM_VALUES = LEVELS | SWITCHES
"""Words that are settings' values, not names or prose: a log level (INFO, DEBUG) and a switch's
state (on, off, enabled, true). In a value place they are the value, so "Switch the log level to
DEBUG" replaces "Log level: INFO", and "new_checkout: disabled" replaces "new_checkout: enabled"
(issue 25: a correction kept beside what it corrects). Lowercase, a switch word is also prose
("Alice is on call", "the build is off track"): there it is a value only when it ends the line."""
_TOKEN = r"(?P<value>[A-Za-z](?:[\w.:-]*[A-Za-z0-9])?)"
_BARE_TRAIL = r"(?P<trail>(?:\s+\([^()]*\))?\s*[.!]?\s*)$"
_LEAD = (r"^[\s>*+-]*(?:(?:please|pls|ok|okay|so|and|also|then|now)\W+)*"
         r"(?:let'?s\s+|(?:we|i)(?:'ll|'ve|\s+(?:should|need to|will|can|must|have|had))?\s+)?")
_SET_TO = re.compile(
    _LEAD + r"(?:set|change[ds]?|switch(?:e[ds])?|move[ds]?|update[ds]?|bump(?:ed|s)?|rename[ds]?|flip(?:ped|s)?"
    r"|turn(?:ed|s)?)\s+(?P<head>[^,;:=|]+?)\s+(?:over\s+)?to\s+" + _TOKEN + _BARE_TRAIL, re.I)
"""The setting said as an instruction or as done: "Set LOG_LEVEL to INFO", "Switch the log level
to DEBUG", "We renamed the default branch to main". What follows "to" ends the line. A bullet or a
quote may lead the line, a code comment ("# Enable tracing") not: it says what code does."""
_TURN = re.compile(
    _LEAD + r"(?:(?:turn(?:ed|s)?|switch(?:e[ds])?|flip(?:ped|s)?)\s+(?P<head>[^,;:=|]+?)\s+(?P<value>on|off)"
    r"|(?:turn(?:ed|s)?|switch(?:e[ds])?)\s+(?P<value2>on|off)\s+(?P<head2>[^,;:=|]+?)"
    r"|(?P<value3>enable|disable)[ds]?\s+(?P<head3>[^,;:=|]+?))" + _BARE_TRAIL, re.I)
"""A switch set by its verb: "Turn new_checkout off", "turn off new_checkout", "Disable caching for
the API". The switch word is the value, whatever it is about the head."""
_SET_START = re.compile(_LEAD + r"(?:set|chang|switch|mov|updat|bump|renam|flip|turn|enabl|disabl)", re.I)
"""What a line needs for `_SET_TO` or `_TURN` to match: one of their verbs where they allow it, at
the start (matched, not searched: most lines fail at their first character)."""
SET = "set"
"""The separator `find` names for the value of a setting said by its verb (`_SET_TO`, `_TURN`)."""
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
    setting = _setting(text, ident, name)
    if setting is not None:
        return setting
    if not _CHARS.search(text):
        return None
    m = _SLOT.search(text)
    if m is None:
        return None
    value, head, sep = m.group("value"), text[: m.start()], m.group("sep").strip()
    sep = TO if sep.endswith(" to") else sep
    if value.lower() in ENUM_VALUES:
        if not value.isupper() and _words(m.group("trail")):
            return None  # "Alice is on call this week": prose, not a switch
    elif not (ident.fullmatch(value) or name.fullmatch(value)) or value.lower() in ATTRIBUTE_NAMES or hexa.fullmatch(value):
        return None
    if not head.strip(" |*-") or not (head[-1].isalnum() or head[-1] in "_])`"):
        return None
    if sep == "|":
        head = head.lstrip()
        head = head[1:] if head.startswith("|") else head
        if head.count("|") != 1:
            return None  # only a three-cell row reads as subject | attribute | value
    return head, sep, m.span("value")


def _setting(text: str, ident: re.Pattern[str], name: re.Pattern[str]) -> tuple[str, str, tuple[int, int]] | None:
    """(head, `SET`, the value's span) of a setting said by its verb (`_SET_TO`, `_TURN`), else None.
    After "to" the value is an identifier, a name, a setting word (`ENUM_VALUES`) or one plain
    lowercase word ("main"); whether the head makes it a value is the caller's to decide."""
    if not _SET_START.match(text):
        return None
    m = _TURN.match(text)
    if m is not None:
        for v, h in (("value", "head"), ("value2", "head2"), ("value3", "head3")):
            if m.group(v) is not None:
                return m.group(h), SET, m.span(v)
    m = _SET_TO.match(text)
    if m is None:
        return None
    value = m.group("value")
    if not (value.lower() in ENUM_VALUES or ident.fullmatch(value) or name.fullmatch(value) or _PLAIN.fullmatch(value)):
        return None
    if value.lower() in ATTRIBUTE_NAMES:
        return None
    return m.group("head"), SET, m.span("value")


_PLAIN = re.compile(r"[a-z][a-z-]{1,30}")


def _words(trail: str) -> bool:
    """The trail after a value holds words beyond a remark in parentheses."""
    return bool(_LETTER.search(_REMARK.sub("", trail)))


_REMARK = re.compile(r"\([^()]*\)")
_LETTER = re.compile(r"[A-Za-z]")


def identifiers(values: Iterable[str], ident: re.Pattern[str], name: re.Pattern[str]) -> bool:
    """Every value is a bare identifier (what `find` takes), none a number, date, path or address."""
    return all(ident.fullmatch(v) or name.fullmatch(v) for v in values)

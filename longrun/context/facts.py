"""Fact units: the lines of a conversation that carry a task fact, found deterministically.

A *unit* is a line of user, assistant or tool text (a long line is split into sentences). A unit
is a fact when it holds something concrete (a number, a path, an identifier, a quoted value, a
checksum, an address) or states a relation or a status about a named thing. What a unit is
*about* is its key: its words and names with the values taken out, so that "billing-svc port:
8443" and a later "billing-svc port: 9090" share a key (the later one wins) while "auth-svc port:
9443" does not.

No model is involved and nothing is paraphrased: the ledger (`ledger.py`) keeps units verbatim,
so an answer stays on the same line as its subject. The heuristics here decide only *which* lines
are kept and which ones a later line supersedes; they err towards keeping (a fact kept twice costs
a line, a fact dropped is lost).

Over 400 lines on purpose: the value patterns, the table of what each needs before it is searched
(`_NEEDS`) and the analysis and masking that use both stay together, so a pattern cannot change
without its prefilter beside it; the per-line analysis and the sets derived from it (subjects,
attributes, held values) share its compiled patterns and its caches. What splits off by job
already lives beside it (`valueslot`, `atomic`, `kinds`, `codelike`, `valuekinds`, `reword`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from longrun.context import atomic, fastre, kinds, valueslot
from longrun.context.codelike import code_like as code_like
from longrun.context.codelike import code_share as code_share
from longrun.context.codelike import log_like as log_like
from longrun.context.memo import text_memo
from longrun.context.valuekinds import specific_kinds as specific_kinds
from longrun.context.valuekinds import value_kinds as value_kinds

MAX_UNIT_CHARS = 400
"""Longer lines are split into sentences; a sentence longer than this is cut at a word."""

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9\"'`(\[*@-])")

_ADDRESS = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?<![\w@])@[\w][\w.-]*")
"""URLs of any scheme (https://, s3://, postgres://), e-mail addresses, @handles: values."""
_HASH = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b")
"""Checksums and commit ids (hex with a digit and a letter), taken before identifiers: a hash
that starts with a letter is not a name."""
_PATH = re.compile(r"(?<![\w-])~?/?(?:[\w.-]+/)+[\w.-]+/?")
"""Paths with a slash: names (what a fact is about), so two files' facts never share a key."""
_HOST_SUFFIX = r"\.(?:com|net|org|io|dev|app|ai|co|cloud|internal|local|lan|svc|cluster|corp|test|example|us|eu|uk|de)(?![\w.-])"
_HOST = re.compile(r"(?<![\w.-])(?=[a-z0-9-]*[\d-][a-z0-9-]*\.)[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*" + _HOST_SUFFIX, re.I)
"""A host name whose first part holds a digit or a hyphen (api2.example.com, db-1.internal,
pg-main-2.prod.internal): one name, taken before identifiers, which would take api2 or db-1 and
leave the domain. Only a host's suffix ends it: checkout-web.datasource is a thing's field."""
_IDENT = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+(?:\.\d+)*\b|\b(?![vV]\d+\.\d)[A-Za-z]+\d+[A-Za-z0-9]*\b")
"""billing-svc, PARAM_alpha_7, T-14, eu-west-2, node7, and a sub-task's spotter-gqc.2: names,
taken before numbers so that the digits of an identifier are not read as its value (spotter-gqc.2
is not spotter-gqc at 2, or closing its sub-task .3 would replace it); not a version's "v2" of
v2.3.1 (a value)."""
_VALUE = fastre.Folded(re.compile(
    r"\b(?=[0-9a-f]*\d)[0-9a-f]{7,64}\b"                      # hashes, commit ids
    r"|\b\d{4}-\d{2}-\d{2}(?:[t ][\d:]+z?)?\b"                # dates (re.I: T, Z; lowercase for fastre)
    r"|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"                  # IPv4 (and port)
    r"|\b\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])"               # 120,000: one number, not two
    r"|\b\d+(?:[.,]\d+)?\s?(?:%|ms|s|sec|m|min|h|d|kb|mb|gb|tb|kib|mib|gib|rps|qps|rpm"  # quantities
    r"|milliseconds?|seconds?|secs|minutes?|mins|hours?|hrs?|days?|weeks?)(?!\w)"  # "30 seconds" is "30s"
    r"|(?<![\w-])\d+(?:\.\d+)?(?:°?[cf]|ki|mi|gi|ti|k|x)(?![\w-])"  # 512Mi, 75F, 30°C, 10k, 2x (no space; not in a uuid)
    r"|\bv?\d+(?:[.:]\d+)+(?:[-+][\w.]+)?\b"                   # versions, times, ratios
    r"|(?<![\w-])\d{1,2}(?:st|nd|rd|th)(?![\w-])"               # a day of the month: the 19th
    r"|\b\d+\b"                                               # plain numbers
    r"|\"[^\"\n]{1,120}\"|`[^`\n]{1,120}`|(?<!\w)'[^'\n]{2,80}'(?!\w)",  # quoted values
    re.I,
))
_NAME = re.compile(
    r"\b[A-Za-z][A-Za-z0-9]*(?:[.:][A-Za-z0-9]+)+\b"          # a.b, host.example.com, pkg:thing
    r"|\b[A-Z][A-Z0-9]{1,}\b"                                 # ACRONYMS, KEYS
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"                           # camelCase
    r"|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b"                   # CamelCase
)
_HEX_RUN = re.compile(r"[0-9a-f]{7}")
_IDENT_CHAR = re.compile(r"[-_\d]")
_VALUE_CHAR = re.compile(r"[\d\"'`]")
_NAME_CHAR = re.compile(r"[.:A-Z]")
_NEEDS: dict[object, Any] = {
    _ADDRESS: lambda t: "@" in t or "://" in t,
    _HASH: _HEX_RUN.search,
    _PATH: lambda t: "/" in t,
    _HOST: re.compile(_HOST_SUFFIX, re.I).search,
    _IDENT: _IDENT_CHAR.search,
    _VALUE: _VALUE_CHAR.search,
    _NAME: _NAME_CHAR.search,
}
"""What every match of each value pattern needs somewhere in the line (an address `@` or `://`,
a hash seven hex digits in a row, a path `/`, a host name a host's suffix (.com, .internal), an
identifier `-`, `_` or a digit, a value a digit or a quote, a name `.`, `:` or a capital): a line
without it is not searched (extraction's cost, issue 25)."""
_NEED_OF: dict[int, Any] = {id(p): need for p, need in _NEEDS.items()}
"""`_NEEDS` by the pattern's id, as the analysis looks it up: a compiled pattern's hash is computed
from its whole compiled code at every lookup (about 1 µs for `_IDENT`, five lookups a line)."""
_JSON_KEY = re.compile(r"\"([\w.-]+)\"\s*:")
_JSON_PAIR = re.compile(r"\"([\w.-]+)\"\s*:\s*\"([^\"\n]{1,120})\"")
_WORD = re.compile(r"[a-z][a-z']+")

RELATION = fastre.fold(re.compile(
    r"\b(?:depends? on|dependency of|relies on|requires|routes? (?:to|through|via)|(?:is |are )?routed (?:to|through|via)"
    r"|forwards? to|proxies to|calls|talks to|points? (?:to|at)|runs? (?:in|on)|hosted (?:in|on|by)|deployed (?:to|in|on)"
    r"|lives? (?:in|on|at)|located (?:in|at)|owned by|owns|owner|maintained by|maintainer|belongs to|backed by|backs"
    r"|reads? from|writes? to|publishes to|subscribes to|consumes|feeds|replaces|replaced by|upstream|downstream"
    r"|is served by|serves|mounted (?:at|on)|stored (?:in|at)|pinned to|uses)\b|->|=>|→",
    re.I,
))
STATUS = fastre.fold(re.compile(
    r"\b(?:done|completed?|finished|closed|merged|shipped|resolved|in[- ]progress|wip|ongoing|started|blocked"
    r"|pending|todo|to-do|not started|next (?:action|step)|waiting (?:on|for)|on hold|paused|failed|failing"
    r"|passing|green|red|open|queued|deferred|cancell?ed|status)\b|^\s*[-*]?\s*\[[ x]\]",  # re.I: X too
    re.I,
))
INSTRUCTION = re.compile(
    r"^\W*(?:(?:please|pls|and|also|so|you|we)\W+)*(?:never|always|must|do not|don't|make sure|ensure|avoid|only ever"
    r"|under no circumstances|remember to|stop|keep|use|prefer)\b",
    re.I,
)
"""A human's instruction (an imperative at the start of the line: "Never restart ...", "Please
make sure ..."), which stays verbatim even when it names no value. A rule anywhere in the line
(`kinds.RULE`: "SAFETY RULE: Never ...", "The code must never be shared") is one too."""
NOT_CUE = fastre.fold(re.compile(r"\bnot\b", re.I))
"""'not' corrects ("45s, not 30s") except in a rule or a preference ("do not push", "Python, not
JavaScript"), where it is the rule's own word, not a correction of other lines."""
CORRECTION = fastre.fold(re.compile(
    r"^\W*(?:please\s+)?update\b|\b(?:correction|corrected|actually|scratch that|updated|updates?(?=\s*[:\u2014\u2013]|\s+-\s)"
    r"|(?:an?|quick|small|latest|one more) update|changed? (?:from|to)|revised?|amended?|instead|rather than"
    r"|no longer|(?:is|are) now|now (?:is|are|set|points|runs|uses|lives)|earlier i said|i said|i meant|make that"
    r"|should be|supersed\w*|final(?:ly)?|was|were|wrong|previous(?:ly)?|formerly|used to be|replac\w+)\b",
    re.I,
))
"""Words by which a line says it corrects or replaces what was said before. "Update" counts as
one where it announces ("Update: ...", "Quick update -", "We updated ...") or orders ("Update the
timeout to 45s", at the start of the line), not where an agent plans ("Now update SessionLive to
subscribe to ...", "Let me update the tests") or names a thing ("live tail updates"): those say
nothing about an earlier line."""
DISMISSED = fastre.fold(re.compile(
    r"\b(?:unrelated|off[- ]topic|irrelevant|not relevant|no longer relevant|disregard|ignore (?:this|that|the|my)"
    r"|obsolete|outdated note|stale note|for fun|just chatting|not for this project|other team'?s|not ours"
    r"|different project|another project"
    r"|(?:runbook|docs?|documentation|wiki|page|notes?|readme|spreadsheet|diagram)s? (?:says|said|lists|listed|shows|showed"
    r"|claims|claimed)\b(?:[^.\n]|\.(?=\S))*\b(?:outdated|out of date|stale|obsolete)"
    r"|(?:outdated|out-of-date|stale) (?:runbook|docs?|documentation|wiki|page|notes?|readme|spreadsheet|diagram)s? (?:says|said"
    r"|lists|listed|shows|showed|claims|claimed))\b",
    re.I,
))
"""A line that says of itself it is unrelated or to be ignored, or quotes a source it calls out of
date ("the 2021 runbook says X; that runbook is outdated", "the stale wiki says X"): not a fact.
Neither a thing called outdated ("libfoo 1.2 is outdated" is a fact about libfoo) nor a correction
of a stale source ("the docs are out of date: the port is 9090") is dismissed this way."""

STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "from", "by", "with", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "there", "here", "i", "we", "you", "he", "she", "they", "me", "us", "our", "your", "my", "his", "her", "their", "them", "so", "then", "than", "too", "very", "just", "also", "please", "ok", "okay", "yes", "no", "not", "now", "will", "would", "should", "could", "can", "may", "might", "must", "shall", "do", "does", "did", "done", "has", "have", "had", "having", "what", "which", "who", "whom", "when", "where", "why", "how", "all", "any", "some", "each", "every", "both", "few", "more", "most", "other", "such", "only", "own", "same", "into", "over", "under", "again", "further", "once", "about", "above", "below", "up", "down", "out", "off", "if", "else", "while", "after", "before", "during", "let", "lets", "let's", "get", "got", "go", "going", "make", "made", "set", "use", "used", "using", "via", "per", "new", "old", "value", "values",
     # a pronoun with its verb ("We're targeting Python 3.11"): says no more than the pronoun
     "we're", "we've", "we'll", "we'd", "i'm", "i've", "i'll", "i'd", "you're", "you've", "you'll", "they're",
     "they've", "they'll", "he's", "she's", "that's", "there's", "here's"]
)
_CUE_WORDS = frozenset(
    ["correction", "corrected", "actually", "scratch", "update", "updated", "updates", "changed", "change", "revised", "revise", "amended", "amend", "instead", "rather", "longer", "earlier", "said", "meant", "make", "should", "supersede", "superseded", "final", "finally", "wrong", "now", "was", "not", "is", "it's", "that",
     "previous", "previously", "formerly", "tentatively", "provisional", "provisionally", "probably", "tbd", "may",
     "for"]
)


@dataclass
class Unit:
    """One line of the conversation that may carry a fact.

    `source` is "user", "agent", "tool" or "note" (a task-state note); `where` names the tool call a tool unit came from
    (its tool and key input), empty otherwise; `order` is its position in the conversation."""

    text: str
    source: str
    where: str = ""
    order: int = 0
    values: frozenset[str] = field(default_factory=frozenset)
    names: frozenset[str] = field(default_factory=frozenset)
    words: frozenset[str] = field(default_factory=frozenset)
    kind: str = "value"
    """`kinds.Kind`: rule, decision, value, status or preference; decides its priority class."""
    rejected: bool = False
    """A decision that rejects an alternative."""
    labelled: bool = False
    """Led by a type label its author wrote ("FACT:", "Critical:"): a line typed as a record."""
    typed: bool = False
    """Led by an ALL-CAPS type label ("FACT:", "GOAL STATE:", "USER PREFERENCE:"): its author
    marked it as a record to keep, which the selection honours before untyped lines."""
    relation: bool = False
    instruction: bool = False
    """An instruction ("never ...", "make sure ...", "do not ..."): kept even without a value."""
    status: bool = False
    correction: bool = False
    count: int = 1
    quoted: bool = False
    """Kept verbatim elsewhere in the summary (a human message): folded, so that it supersedes
    what it corrects, but not rendered twice."""
    origin: str = ""
    """For a quoted unit: the human message it is quoted in."""
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Derived sets (subjects, held values, attributes, kinds), computed once per unit."""

    @property
    def key(self) -> tuple[str, frozenset[str]]:
        """What the unit is about: its tool source, names and content words, values removed."""
        return (self.where, self.names | self.words)

    @property
    def is_fact(self) -> bool:
        return bool(self.values or self.names) or ((self.relation or self.status or self.instruction) and bool(self.words)) or (
            bool(self.words & kinds.DAYS) and len(self.words) > 1) or (  # "the deadline is Thursday": a day is a value
            # a line its author typed as a record ("FACT: Smyi Gzuug is handling support"), or a
            # human's preference or decision, is one whatever tokens it has
            self.source in ("user", "note") and (self.typed or self.kind in ("preference", "decision")) and len(self.words) > 1)


def split_units(text: str, prose: bool = True) -> list[str]:
    """`text` as candidate units: its non-empty lines, split into sentences (`prose`: always;
    otherwise only lines over MAX_UNIT_CHARS, since a tool's line is its own record), none over
    MAX_UNIT_CHARS (cut at a word, marked)."""
    return list(_split_units(text, prose))


def _sentences(line: str) -> list[str]:
    """The sentences of a line, a leading list number kept with the first: "1. Use port 8080."
    is one unit, not "1." (a fact of its own, with the value 1) and "Use port 8080."."""
    lead = _NUMBERED.match(line) if line[:1].isdigit() else None
    at = lead.end() if lead else 0
    parts = [s for s in _SENTENCE_END.split(line[at:]) if s]
    if at and parts:
        parts[0] = line[:at] + parts[0]
    return parts


_RULE_CHARS = frozenset("|-:+=*#_ `~")
"""What a table rule or a divider is made of: such a line holds no fact."""


@text_memo(4_000_000)
def _split_units(text: str, prose: bool) -> tuple[str, ...]:
    """`split_units`, cached: a compaction reads the same messages when it sizes its tail, when it
    extracts them into the fact store and when it decides which human messages to quote."""
    out: list[str] = []
    header = ""
    parent: tuple[int, str] | None = None  # (indent, names) of the line nesting the next ones
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line or _RULE_CHARS.issuperset(line):
            continue
        indent = len(raw) - len(raw.lstrip())
        if parent is not None and indent > parent[0]:
            child = atomic.child(line, parent[1])
            if child is not None:  # "orders-api:" then "  port: 8443": one fact, "orders-api: port: 8443"
                out.append(child)
                continue
        elif parent is not None:
            parent = None
        said = atomic.nests(line)
        if said:
            parent = (indent, said)
        pairs = atomic.pairs(line, header, attribute_word)
        if pairs:
            out += pairs
            continue
        header = line if atomic.header_like(line) else ""
        # a rule keeps its line whole: "Budget cap is $956 total. Never exceed without explicit
        # approval." is one fact, and either half alone misleads; so does a labelled line ("GOAL
        # STATE: ..."), whose label types every sentence after it, and an override ("We tried A on
        # X and it did not hold up; B it is."), whose new choice would lose what it is about
        # (asked only of prose: a tool's line up to the cap is its own record whatever it says)
        split = len(line) > MAX_UNIT_CHARS or (prose and not (
            fastre.found(kinds.RULE, line) or bool(kinds.LABEL.match(line)) or fastre.found(kinds.OVERRIDE, line)))
        parts = _sentences(line) if split else [line]
        for p in parts:
            if len(p) > MAX_UNIT_CHARS:
                p = p[: p.rfind(" ", 0, MAX_UNIT_CHARS) if " " in p[:MAX_UNIT_CHARS] else MAX_UNIT_CHARS] + " …"
            out.append(p)
    return tuple(out)


def analyse(text: str, source: str, where: str = "", order: int = 0) -> Unit:
    """A unit with its values (numbers, quantities, versions, dates, hashes, addresses, quoted
    values), names (paths, identifiers, acronyms) and content words, its cues and its kind. A
    type label leading the line ("SAFETY RULE:", "Critical:") decides the kind but is not part of
    what the line is about (`kinds.strip_label`); the text stays verbatim."""
    # the dataclass's own fields, as its __init__ sets them (no __post_init__), copied from the
    # cached ones in one go: a compaction makes a Unit for every line it reads and every row it
    # indexes, and three `update`s of the instance's dict cost 3-4 times this copy (issue 25)
    u = object.__new__(Unit)
    u.__dict__ = {**_cues(text, source), "where": where, "order": order}
    return u


_NUMBERED = re.compile(r"\s*(?:\d{1,4}[.)]\s+|\d{1,6}→)")
"""A list item's number ("1. ", "12) ") or a file line's ("  40→", as a file reader prints it)."""


def _unnumbered(text: str) -> str:
    """The line without a leading list or line number: its place in a list or a file, not a value
    of the fact. As a value, "1" of "1. [epic] X: ... updates" (read as a correction by its word
    "updates") linked it to "10 files changed, 548 insertions(+), 1 deletion(-)" and to every
    file's first line ("1→defmodule ..."), and those left the current facts (real sessions)."""
    if not text[:1].isdigit() and not text[:1].isspace():
        return text
    m = _NUMBERED.match(text)
    return text[m.end():] if m else text


@lru_cache(maxsize=65_536)
def _cues(text: str, source: str) -> dict[str, Any]:
    """`analyse`'s fields but `where` and `order`, which depend on the text and its source alone,
    cached: every compaction of a run reads its store's current rows again (the dict is copied
    into each Unit's fields, whose values are immutable). Its `memo` is shared by every Unit of the
    same text and source: what is memoised there (subjects, held values, attributes, topic)
    derives from those fields alone, so each compaction's fold does not derive it again for every row."""
    label, body = kinds.strip_label(_unnumbered(text))
    values, names, words, relation, status, correction = _analysis(body)
    kind: str = kinds.classify(body, relation=relation, status=status, label=label) if source != "tool" else (
        "status" if status else "value")
    # in a tool's output "updated_at", "NOT NULL", "was" or "final" is data, not a speaker
    # correcting what was said: a later output replaces an earlier one by key or subject only.
    # Else the label, if any, may say it corrects ("Correction:"), and "not" does outside rules
    correction = source != "tool" and (
        correction or (len(body) < len(text) and fastre.found(CORRECTION, text[: len(text) - len(body)]))
        or (kind not in ("rule", "preference") and fastre.found(NOT_CUE, body)))
    instruction = source in ("user", "note") and (bool(INSTRUCTION.search(body)) or kind == "rule")
    return {  # the dataclass's field order
        "text": text, "source": source, "where": "", "order": 0,
        "values": values, "names": names, "words": words, "kind": kind,
        "rejected": kind == "decision" and kinds.rejects(body), "labelled": bool(label),
        "typed": bool(label) and source != "tool" and kinds.typed(text), "relation": relation,
        "instruction": instruction, "status": status, "correction": correction,
        "count": 1, "quoted": False, "origin": "", "memo": {}}


@lru_cache(maxsize=65_536)
def _analysis(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str], bool, bool, bool]:
    """The parts of `analyse` that depend on the text alone, cached: a worker re-reads the same
    lines at every compaction of a run."""
    values: set[str] = set()
    names: set[str] = set()

    def take(pattern: re.Pattern[str] | fastre.Folded, into: set[str], rest: str) -> str:
        """Each match's value into `into`, and `rest` with each match replaced by a space (one
        pass: what `pattern.sub(" ", rest)` gives, none of these patterns matching empty). A line
        without a character every match needs (`_NEEDS`) is not searched."""
        need = _NEED_OF.get(id(pattern))
        if need is not None and not need(rest):
            return rest
        parts: list[str] = []
        at = 0
        for m in pattern.located(rest) if isinstance(pattern, fastre.Folded) else pattern.finditer(rest):
            a, b = m.span()
            v = rest[a:b].strip("\"'`").rstrip(".,;:").strip()
            if v:
                into.add(v)
            parts.append(rest[at:a])
            at = b
        if not parts:
            return rest
        parts.append(rest[at:])
        return " ".join(parts)

    keys: set[str] = set()
    rest = text
    if rest.lstrip().startswith("{"):
        # a JSON record: its keys are attributes (content words), not subjects or values
        keys = {k.lower() for k in _JSON_KEY.findall(rest)}
        rest = _json_values(rest, values)
        rest = _JSON_KEY.sub(" ", rest)
    else:
        slot = valueslot.find(rest, _IDENT, _NAME, _HASH)
        if slot is not None and _head_says_of_a_subject(*slot, value=rest[slot[2][0]:slot[2][1]]):
            a, b = slot[2]
            values.add(rest[a:b])
            rest = f"{rest[:a]} {rest[b:]}"
        elif ":" in rest and (span := _word_value(rest)) is not None:
            a, b = span
            values.add(rest[a:b])
            rest = f"{rest[:a]} {rest[b:]}"
    rest = take(_ADDRESS, values, rest)
    rest = take(_HASH, values, rest)
    rest = take(_PATH, names, rest)
    rest = take(_HOST, names, rest)
    rest = take(_IDENT, names, rest)
    rest = take(_VALUE, values, rest)
    rest = take(_NAME, names, rest)
    names = {n for n in names if n.lower() not in STOPWORDS}
    words = {w for w in [*_WORD.findall(rest.lower()), *keys] if w not in STOPWORDS and w not in _CUE_WORDS}
    return (frozenset(values), frozenset(n.lower() for n in names), frozenset(_stem(w) for w in words),
            fastre.found(RELATION, text), fastre.found(STATUS, text), fastre.found(CORRECTION, text))


_KEY_WORDS = re.compile(r"^(?P<head>[A-Za-z][A-Za-z ]{0,30}):\s+(?P<value>[A-Za-z][\w.' -]{0,40}?)\.?$")


def _word_value(line: str) -> tuple[int, int] | None:
    """Where the value of a `Key: words` record whose key is attribute words alone stands ("Owner:
    Alice Smith", "Region: Frankfurt.", "Deadline: next Friday"), as `valueslot.find` says where a
    `KEY=` value stands: a later "Owner: Bob" replaces it. Only a short value of words (an
    identifier or a number is found by the other patterns), after a key of one to three words each
    of an attribute group (`SYNONYMS`)."""
    m = _KEY_WORDS.match(line)
    if m is None:
        return None
    head = m.group("head").lower().split()
    if not 0 < len(head) <= 3 or not all(attribute_word(w) for w in head):
        return None
    value = m.group("value").rstrip()
    if not value or len(value.split()) > 4 or any(c.isdigit() for c in value):
        return None
    return m.start("value"), m.start("value") + len(value)


def _json_values(record: str, values: set[str]) -> str:
    """A JSON record's identifier values into `values`, but its first field's, which names the
    record (`{"name": "cedar-orders", "flag": "ff_a", "previous": "ff_b"}` is about cedar-orders;
    ff_a is what it says of it): `record` with them blanked. The JSON form of `valueslot`."""
    spans = [m.span(2) for m in _JSON_PAIR.finditer(record)][1:]
    spans = [(a, b) for a, b in spans if valueslot.identifiers((record[a:b],), _IDENT, _NAME)]
    for a, b in reversed(spans):
        values.add(record[a:b])
        record = f"{record[:a]} {record[b:]}"
    return record


def _head_says_of_a_subject(head: str, sep: str, span: tuple[int, int], value: str = "") -> bool:
    """Whether what precedes a value place (`valueslot.find`) makes the token there a value: what
    follows `KEY=` always is; before a colon, `is` or a table row's last cell, the head must name a
    subject and say something of it (a content word or an attribute name). After a label
    ("Blocked: T-14", "Next up: MIG-7") or a bare name ("orders-api: pg-main-3") the identifier
    stays a subject, and two such lines stay two facts. After attribute words alone ("Region:
    us-east-1", "The cluster is k8s-east-3": each word one of `SYNONYMS`), or after one such word
    with at most two qualifiers before it ("Our primary region is"), it is the attribute's value,
    as after `region=`, so a later region replaces it. After "<verb> to" (`valueslot.TO`) only
    those heads make a value: after a name it is a relation's other end. A log level or a switch's
    state (`valueslot.ENUM_VALUES`) is a value after any head; after a setting's verb
    (`valueslot.SET`) the head may name only settings' keys and acronyms (LOG_LEVEL, the API), not a
    thing (checkout-web)."""
    if sep == "=":
        return True
    _, names, words, *_ = _analysis(head)
    if value.lower() in valueslot.ENUM_VALUES:
        return bool(names or words)  # a level or a switch is never what a line is about
    if sep == valueslot.SET:  # "Set LOG_LEVEL to INFO", "Switch the API to gRPC", not "Switch checkout-web to pay-v2"
        return bool(names or words) and all(n.isalpha() or _CONFIG_KEY.fullmatch(n) for n in names)
    if not names and words and (all(w in _CANON for w in words) or _qualified_attribute(head, words)):
        return True
    if sep == valueslot.TO:  # "checkout-web switched to pay-v2": a relation of two names, not a value
        return False
    return bool(_subjects_of(names)) and bool(words or names & ATTRIBUTE_NAMES or any(attribute_key(n) for n in names))


def _qualified_attribute(head: str, words: frozenset[str]) -> bool:
    """The head is an attribute word after at most two words that qualify it ("Our primary
    region", "The default build tag"): what follows is that attribute's value, as after "Region:"."""
    last = _HEAD_WORD.findall(head.lower())
    return bool(last) and attribute_word(last[-1]) and len(words) <= 3


_HEAD_WORD = re.compile(r"[a-z]+")
_CONFIG_KEY = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
"""A setting's key (log_level, max_retries, names lowercased): what a setting line sets, not a
thing it relates to another."""


def said_alike(u: Unit, o: Unit) -> bool:
    """Whether two lines may be the same fact said again, as far as their values tell: when the
    only kind of value they share is "other" and each holds a bare identifier (`valueslot`: a value
    that says nothing of what it is), they must say the attribute in the same words, a synonym is
    not enough ("lunar-maps region: us-west-2" is not "| lunar-maps | cluster | k8s-umber-16 |",
    although region and cluster share a group). So must two lines whose values are words
    (`_word_value`: "Region: Frankfurt" is not "Zone: b")."""
    mine, theirs = held_values(u), held_values(o)
    if value_kinds(mine) & value_kinds(theirs) != {"other"}:
        return True
    if not (any(_bare(v) for v in mine) and any(_bare(v) for v in theirs)):
        return True
    return bool(attribute_words(u) & attribute_words(o))


def _bare(value: str) -> bool:
    """A value that says nothing of what it is: an identifier, or words."""
    return bool(valueslot.identifiers((value,), _IDENT, _NAME) or _WORDS_ONLY.fullmatch(value))


_WORDS_ONLY = re.compile(r"[A-Za-z][A-Za-z' -]*")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    """A crude stem so "routes"/"routed"/"routing" and "listens"/"listening" share a key (cached:
    a transcript's lines repeat their words, and every line's words are stemmed)."""
    return _stem_of(word)


def _stem_of(word: str) -> str:
    """The first of "ing", "ed", "er", "es", "s" the word ends with, off, when three letters stay.
    Decided by the last letter (only "es" and "s" share one, "es" first): a cold transcript stems
    every new word, and trying each suffix in turn was a twentieth of a line's analysis (issue 25)."""
    n = len(word)
    last = word[-1:]
    if last == "s":
        if n >= 5 and word[-2] == "e":
            return word[:-2]
        return word[:-1] if n >= 4 else word
    cut = _SUFFIX_OF.get(last)
    if cut is not None and n - len(cut) >= 3 and word.endswith(cut):
        return word[: -len(cut)]
    return word


_SUFFIX_OF = {"g": "ing", "d": "ed", "r": "er"}


SYNONYMS = {
    "owner": ("owner", "own", "owns", "owned", "maintainer", "maintain", "maintained", "steward", "assignee",
              "assigned", "reassigned"),
    "oncall": ("oncall", "on-call", "page", "pages", "paged", "pager", "handle", "escalation", "rota"),
    "endpoint": ("endpoint", "url", "reachable", "address", "host", "hostname", "base", "uri", "webhook", "ip", "resolves"),
    "where": ("region", "zone", "cluster", "deploy", "deployed", "run", "runs", "hosted", "located", "lives"),
    "version": ("version", "pinn", "pinned", "release", "build", "tag"),
    "port": ("port", "listen", "listens"),
    "path": ("path", "config", "file", "dir", "directory", "location"),
    "digest": ("checksum", "hash", "digest"),
    "flag": ("flag", "feature", "toggle"),
    "share": ("share", "canary", "percent", "percentage", "rollout"),
    "budget": ("budget", "error"),
    "backoff": ("backoff", "retry", "backs", "back"),
    "timeout": ("timeout", "times", "timed", "time"),
    "date": ("date", "launch", "launches", "deadline", "due", "live", "goes", "ships", "cutover"),
}
"""Attribute words of software-project facts that name the same thing ("pages @x" and "on-call
handle is @y"): a correction that says it one way replaces the line that said it the other."""
_CANON = {form: group for group, words in SYNONYMS.items() for w in words for form in (w, _stem(w))}
ABBREVIATIONS = {"database": ("database", "db"), "environment": ("environment", "env"),
                 "repository": ("repository", "repo"), "production": ("production", "prod"),
                 "maximum": ("maximum", "max"), "minimum": ("minimum", "min")}
"""A word and its abbreviation ("db port", "the database port"): one word when a topic is
compared (`CANON`), not attribute words (`SYNONYMS`), so `orders_db` or `get_env` stays a name."""
CANON = {**{form: group for group, words in ABBREVIATIONS.items() for w in words for form in (w, _stem(w))}, **_CANON}
"""A word or its stem -> its synonym group or its word unabbreviated (`reword` normalises topics
with it)."""


def attributes(u: Unit) -> set[str]:
    """What a unit says about its subject: its content words, the parts of its snake_case
    names (schema_md5: schema, md5), and their synonym groups."""
    if "attrs" not in u.memo:
        u.memo["attrs"] = _attributes(u)
    return set(u.memo["attrs"])


def _attributes(u: Unit) -> set[str]:
    parts = attribute_words(u)
    return parts | {_CANON[p] for p in parts if p in _CANON}


def attribute_words(u: Unit) -> set[str]:
    """`attributes` as said, without their synonym groups."""
    parts = {p for w in u.words for p in (w, *w.split("_")) if len(p) > 1}
    for n in u.names:
        if "_" in n:
            parts.update(p for p in n.split("_") if len(p) > 1)
        elif n in _CANON or n in ATTRIBUTE_NAMES:
            parts.add(n)
    return parts


ATTRIBUTE_NAMES = valueslot.ATTRIBUTE_NAMES
"""Names that look like identifiers but say what, not who: never a fact's subject."""


def subjects(u: Unit) -> frozenset[str]:
    """The names a unit is about: its names but attribute ones (sha256, md5, on-call) and paths
    (a path is what a config or a file fact says, its value)."""
    if "subjects" not in u.memo:
        u.memo["subjects"] = _subjects(u)
    return u.memo["subjects"]  # type: ignore[no-any-return]


def _subjects(u: Unit) -> frozenset[str]:
    return _subjects_of(u.names)


@lru_cache(maxsize=65_536)
def _subjects_of(names: frozenset[str]) -> frozenset[str]:
    return frozenset(n for n in names if n not in _CANON and n not in ATTRIBUTE_NAMES and "/" not in n
                     and not attribute_key(n))


def attribute_word(word: str) -> bool:
    """A lowercase word (or its stem) of an attribute group (`SYNONYMS`): port, region, owner..."""
    return word in _CANON or _stem(word) in _CANON


def attribute_key(name: str) -> bool:
    """A lowercase snake_case key made of words, one of them an attribute (launch_date,
    config_path, error_budget): what a fact says, not who it is about. PARAM_alpha_7 and
    billing_svc_2 are subjects."""
    parts = name.split("_")
    return len(parts) > 1 and all(p.isalpha() and p.islower() for p in parts) and any(
        p in _CANON or _stem(p) in _CANON for p in parts)


def held_values(u: Unit) -> frozenset[str]:
    """Its values, and the paths it names (values of what it says)."""
    if "held" not in u.memo:
        u.memo["held"] = _held(u)
    return u.memo["held"]  # type: ignore[no-any-return]


def _held(u: Unit) -> frozenset[str]:
    return u.values | frozenset(n for n in u.names if "/" in n)


@lru_cache(maxsize=65_536)
def dismissed(text: str) -> bool:
    """The line says itself that it is unrelated, obsolete or to be ignored (cached: a compaction
    asks it of every unit it reads, and a run's lines repeat)."""
    return fastre.found(DISMISSED, text)


@lru_cache(maxsize=65_536)
def template(text: str) -> str:
    """The unit with its values and digits masked: near-duplicate lines share a template."""
    masked = text.lower()
    # a line without what every match needs (`_NEEDS`) is not searched: the same text, at a
    # fraction of the cost (the fold masks both lines of every replacement, issue 25)
    if _NEED_OF[id(_ADDRESS)](masked):
        masked = _ADDRESS.sub("#", masked)
    if _NEED_OF[id(_VALUE)](masked):
        masked = _VALUE.sub("#", masked)  # `Folded.sub`: from its fast spans
        masked = _DIGITS.sub("#", masked)
    return " ".join(_MASKED_WORD.findall(masked))


_DIGITS = re.compile(r"\d+")
_MASKED_WORD = re.compile(r"[a-z#]+")


def information(u: Unit) -> float:
    """How much a unit tells, for the ledger's budget: about one fact a line, a little more for
    each further concrete token (up to four), a relation or a status; the same whoever said it
    (a fact from a probe is worth as much as one from the user), a little more for the agent's
    own notes, much less for a line of code or a log record (one of a series the results index
    keeps whole)."""
    concrete = len(u.values) + len(u.names)
    base = (1.0 + 0.5 * min(max(concrete - 1, 0), 4)) if concrete else 0.5
    base += (0.5 if u.relation else 0.0) + (0.5 if u.status else 0.0) + (0.5 if u.instruction else 0.0)
    base += 1.0 if u.labelled else 0.0  # its author typed it as a record ("FACT: ...")
    weight = 1.2 if u.source == "note" else 1.0
    if u.source == "tool" and (code_like(u.text) or log_like(u.text)):
        weight *= 0.2
    return base * weight


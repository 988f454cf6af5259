"""Supersession across rewording (issue 25, cause 5): "We are calling the project RIECI-121 now"
replaces "The project codename is DNSNU-172", and "moved the deadline to Friday" replaces "deadline
is Thursday", although neither pair shares a key, a subject name or a value.

A line's *topic* is its subject names and content words with the verbs that only say a value
changed dropped, synonym groups (`facts.SYNONYMS`, and the naming words) made one; a later line
with an equal topic and a value of the same kind replaces the latest earlier one. Equal, not
overlapping: a false supersession loses a fact ("Conference spending ceiling" and "Project spending
ceiling" stay two), a missed one only keeps an old line beside the new.

Also here: a rename that names both things, a line that names the value it replaces ("instead of
B", `old_terms`), a single-valued relation re-pointed in other words (`relation`), and an
override of a plan or decision (`overrides`): retention's last superseded values shown as current
and its rejected-plan shape (issue 25).

Past 400 lines on purpose: every rule here shares the topic words (`words_of`, `topic`) and the
cue patterns, and a split along the rules (relations already live in `relation.py`, work items in
`workstate.py`) would pass those back and forth between modules.

Tests: tests/test_context_atomic.py, tests/test_context_supersede.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from longrun.context import facts, fastre, kinds, relation, valueslot, workstate
from longrun.context.facts import Unit

if TYPE_CHECKING:
    from longrun.context.ledger import Entry


_NAMING = frozenset(("name", "nam", "codename", "codenam", "call", "calle", "renam", "rename", "dub", "dubb", "known",
                     "refer", "titl", "title"))
"""Stems of the words that say what a thing is called ("codename", "we are calling it", "renamed
to"): one synonym group, so a rename in other words supersedes the old name."""
_MOVES = frozenset(("mov", "move", "chang", "set", "updat", "push", "pushe", "bump", "shift", "switch", "reschedul",
                    "slip", "slipp", "forward", "rotat", "rotate", "go", "goe", "went",
                    # verbs that say a number changed ("raised to 800 rpm", "scaled to 9 nodes"); not
                    # "lower" or "cut", which are also what a thing is ("lower limit", "cut-over")
                    "rais", "raise", "increas", "decreas", "reduc", "tighten", "relax", "scal", "scale", "doubl",
                    "halv", "extend", "shorten", "upgrad", "downgrad", "migrat", "loosen", "widen", "narrow",
                    # and their base forms, which stem to themselves ("Upgrade the build to Node 20")
                    "upgrade", "downgrade", "migrate", "increase", "decrease", "reduce", "double", "halve"))
"""Stems of verbs that only say a value changed ("moved the deadline to Friday"): not part of
what the line is about."""


def topic(u: Unit) -> tuple[frozenset[str], frozenset[str], frozenset[str]] | None:
    """(topic, value, value kinds) of a unit for supersession across rewording (issue 25, cause 5),
    or None: the topic is its subject names and content words with move verbs dropped and synonyms
    (`facts.SYNONYMS`, the naming group) made one; the value is what it holds, the weekdays and months it
    names, or, for a naming line only, the identifier it names ("The project codename is
    DNSNU-172" and "We are calling the project RIECI-121 now" share the topic {project, ~name})."""
    if "reworded" not in u.memo:
        u.memo["reworded"] = _reworded(u)
    return u.memo["reworded"]  # type: ignore[no-any-return]


def _reworded(u: Unit) -> tuple[frozenset[str], frozenset[str], frozenset[str]] | None:
    words = {w for w in u.words if w not in _MOVES}
    days = {w for w in words if w in kinds.DAYS}
    norm = {"~name" if w in _NAMING else facts.CANON.get(w, w) for w in words - days}
    names, held = facts.subjects(u), facts.held_values(u)
    naming = "~name" in norm
    # only a line naming one or two things can state a relation between two ends: the search is
    # skipped for the others (every unit a compaction reads comes here once)
    cue = relation.cue(u) if len(names) in (1, 2) else None
    # one item, or one beside its priority label ("PAY-88 (P1) is blocked")
    state = workstate.state_of(u) if len(names) in (1, 2) and workstate.incidental(held) and not days else None
    if state is not None:  # "JIRA-4412 moved to Done": the item's one state, whatever the words
        return frozenset({state[0], "~state"}), frozenset({state[1]}), frozenset({"~state"})
    if held or days:
        value, vkinds = held | days, frozenset(facts.value_kinds(held) | ({"date"} if days else set()))
        if naming and valueslot.identifiers(held, facts._IDENT, facts._NAME):
            vkinds |= {"name"}  # "X codename: OLD-1" names X, as "We are calling X NEW-2 now" does
    elif naming and len(names) == 1:
        value, vkinds, names = names, frozenset({"name"}), frozenset()
    elif len(names) == 2 and ((naming and not u.relation) or cue is not None):
        pair = relation.subject_and_target(u, names, None if naming else cue)
        if pair is None:
            return None
        value, names = frozenset({pair[1]}), frozenset({pair[0]})
        # a prose relation is found by a record of it ("| A | routes to | C |"), and replaces
        # another prose line only as a change ("A now routes to C", `relation.repoints`)
        vkinds = frozenset({"name", "other"}) if naming else frozenset({"~prose"} | facts.value_kinds(value))
    else:
        return None
    if cue is not None and not naming and len(names) == 1 and (
            not held or (len(held) == 1 and valueslot.identifiers(held, facts._IDENT, facts._NAME))):
        # the relation, whatever its words, is what a line naming its two ends is about
        said = relation.cue_words(cue) | relation.lead_words(u, next(iter(names)))
        norm = {facts.CANON.get(w, w) for w in words - days
                if w not in relation.FILLER and not any(s.startswith(w) for s in said)}
        norm.add(relation.canonical(cue))
    if not norm:
        return None
    return frozenset(norm | names), frozenset(value), vkinds


_OLD = re.compile(
    r"\b(?:instead of|rather than|in place of|replacing|not|was|were|previously|formerly)\s+(?:(?:the|on|at|in|to)\s+)?"
    r"[`'\"(]?(?P<was>\w[\w.:/@-]*\w)"
    r"|\bfrom\s+[`'\"]?(?P<from>\w[\w.:/@-]*\w)[`'\"]?\s+(?:to|->|=>|→)\s"
)
"""Where a line names the value it replaces: "A routes to C instead of B", "re-pointed A from B to C",
"45s, not 30s", "(was B)". Searched in the lowercased line."""


def old_terms(u: Unit) -> frozenset[str]:
    """The names and values (lowercase) a user's or the agent's line says it replaces (`_OLD`): "bronze-gateway reads from
    shipping-db-10 instead of loyalty-pg-3" replaces the line that holds loyalty-pg-3 beside
    bronze-gateway, whether that line said it as a value ("bronze-gateway.datasource = loyalty-pg-3")
    or as a name ("the LB sends bronze-gateway requests to loyalty-pg-3")."""
    if "old_terms" not in u.memo:
        if u.source not in ("user", "agent"):  # in a tool's output "not NULL" or "from a to b" is syntax
            u.memo["old_terms"] = frozenset()
            return u.memo["old_terms"]  # type: ignore[no-any-return]
        low = u.text.lower()
        found = {m.group("was") or m.group("from") for m in _OLD.finditer(low)} if _OLD_NEEDS.search(low) else set()
        mine = facts.subjects(u) | {v.lower() for v in facts.held_values(u)}
        u.memo["old_terms"] = frozenset(t for t in found if t in mine)
    return u.memo["old_terms"]  # type: ignore[no-any-return]


_OLD_NEEDS = re.compile(r"instead|rather|place|replacing|not|was|were|previously|formerly|from")


def replaces(u: Unit, by_topic: dict[frozenset[str], int], entries: Sequence[Entry | None]) -> int | None:
    """The latest earlier line with the same normalised topic (`topic`: move verbs
    dropped, synonyms and the naming words made one) and a value of the same kind, but another
    value: "moved the deadline to Friday" replaces "deadline is Thursday". Conservative: the topic
    must be equal, not merely overlap, so "Conference spending ceiling" and "Project spending
    ceiling" stay two facts."""
    mine = topic(u)
    if mine is None or asks(u):
        return None
    i = by_topic.get(mine[0])
    e = entries[i] if i is not None else None
    if e is None or i is None or e.unit.where != u.where:
        return None
    theirs = topic(e.unit)
    if theirs is None or not (mine[2] & theirs[2]) or mine[1] <= theirs[1]:
        return None
    if "~state" in mine[2]:  # a work item's one state (`workstate`), in whatever words
        return i
    if any(w.startswith("~rel:") for w in mine[0]):  # one relation of one thing, in whatever words
        return None if "~prose" in mine[2] and not relation.repoints(u, fastre.found(UPDATE, u.text)) else i
    if not facts.said_alike(u, e.unit):
        return None
    if "~prose" in mine[2] or ("~prose" in theirs[2] and not facts.attribute_words(u) & facts.attribute_words(e.unit)):
        return None  # a prose relation's end is a value only for the same relation said in the same words
    return i


_HANDOFF_CUE = r"t(?:ook|akes|aking) over|hand(?:ed|s|ing)? (?:over|off)"
"""A duty handed over ("Bob took over on-call from Alice"): an update cue (`_UPDATE`), and where
what was handed over starts (`_HANDOFF`)."""
_UPDATE = re.compile(
    r"\b(?:now|new|newly|chang\w*|moved?|switch(?:ed)?|rotated|from now on|going forward|henceforth|no longer"
    r"|instead|updated?|revised|retired|replac\w*|previous(?:ly)?|formerly|rebased|renamed|reassign(?:ed)?"
    r"|" + _HANDOFF_CUE +
    # a correction says it changes what was said ("ignore what I said about the port, it's 6432")
    r"|correction|corrected|scratch that|make that|i meant|i said|should (?:be|read))\b",
    re.I,
)
UPDATE = fastre.fold(_UPDATE)
"""A line that says of itself that it changes something ("now belongs to", "has changed to",
"rotated", "from now on"): it may replace an earlier line said in other words (`updates`).
Searched as `fastre.Folded` (the same answers, without IGNORECASE's cost on every unit a fold
reads, issue 25); `words_of` asks the pattern itself (`_UPDATE.fullmatch`) of single words."""
CHANGED_BY = fastre.fold(re.compile(
    r"\b(?:bumped|raised|lowered|increased|decreased|reduced|doubled|halved|tripled|extended|shortened|slipped"
    r"|tightened|relaxed|loosened|widened|narrowed|scaled|pushed (?:back|out)|upgraded|downgraded|migrated"
    r"|(?:is|are|went|gone|came|was|were) (?:up|down) to|cut (?:down )?to)\b"
    # the imperative that sets a number ("Lower the threshold to 70F"), at the start of the line
    r"|^(?:please )?(?:lower|raise|increase|decrease|reduce|cut|bump|double|halve|extend|shorten)\b", re.I))
"""Verbs that say a number or a date changed ("batch size bumped to 128", "release date slipped to
March 15"): an update cue only for a line that states a value, replacing a line that held one of
the same kind ("errors increased after the deploy" says no new error rate, so it replaces none)."""
_GROUP = {"value": "value", "status": "value", "rule": "rule", "preference": "preference", "decision": "decision"}
MIN_SHARE = 0.2
"""Of the earlier line's topic words, the share an update must say too (at least one)."""


def updates(u: Unit, entries: Sequence[Entry | None], near: dict[str, set[int]]) -> int | None:
    """The earlier line a self-declared update (`UPDATE`) replaces although it shares no key and no
    topic with it: "Support duty now belongs to Dyyq Vparr" replaces "Smyi Gzuug is handling support
    escalation this week". The earlier line must come from the same speaker, be of the same class
    (a rule replaces a rule, a preference a preference, a value or status a value or status), hold
    no value of another kind, share a subject with it when both have one, and share at least
    `MIN_SHARE` of its topic words (synonyms made one); the line whose shared words fewest other
    lines say wins (each shared word counts 1/the lines that say it), the latest on a tie. Without an update cue nothing is linked this way: two lines that merely look alike both
    stay."""
    if u.source not in ("user", "agent") or asks(u):
        return None
    held = facts.held_values(u)
    by_number = not fastre.found(UPDATE, u.text)
    if by_number and not (held and fastre.found(CHANGED_BY, u.text)):
        return None
    if _relation_of(u) is not None and relation.adds(u):
        return None  # "A now also routes to C" changes no earlier end
    mine = words_of(u)
    said = words_of(u, names=False)
    # a line whose topic is only a name ("The SLA was raised to 99.95%") updates only a line
    # about that name and nothing else, holding a value of the same kind ("Our SLA is 99.9%")
    names_only = not said
    if names_only and not held:
        return None
    group = _GROUP.get(u.kind, "value")
    # a value said to hold from now on ("region is eu-west-1 going forward") reads as a standing
    # instruction, a rule; it still updates the value it changes (never a value a rule: "spent $300
    # today" does not replace "never exceed $500 a day")
    groups = {group, "value"} if group == "rule" and held and standing_only(u.text) else {group}
    subjects = facts.subjects(u)
    handed = _handed_over(u)
    best: tuple[float, int] | None = None
    for i in sorted({i for w in mine for i in near.get(w, ())}):
        e = entries[i]
        if e is None or e.unit.source != u.source or _GROUP.get(e.unit.kind, "value") not in groups:
            continue
        if _relation_of(u) is not None and _relation_of(e.unit) is not None:
            continue  # two ends of relations: linked by their topics (`replaces`) or not at all
        theirs = words_of(e.unit)
        common = mine & theirs
        if names_only:
            if not mine <= theirs or facts.subjects(e.unit) != subjects:
                continue  # "CPU on node-3 raised to 95%" is not about "CPU is 80%" alone; "TTL is 10
                # minutes going forward" is about "Cache TTL: 5 minutes" (the name said, a word dropped)
        elif not (common & said) or len(common) < MIN_SHARE * len(theirs):
            continue  # a word of its own must match, not only the name both are about
        if handed is not None and not common & handed:
            continue  # "Bob took over billing from Alice" is not about Alice's on-call week
        old_held, old_subjects = facts.held_values(e.unit), facts.subjects(e.unit)
        if by_number and not old_held:
            continue  # said to change by a number-change verb: it replaces a line that held a value
        if held and old_held and (not (_kinds_of(u) & _kinds_of(e.unit)) or held <= old_held):
            continue
        if held and not old_held and not _kinds_of(e.unit) and len(common & said) < 2:
            continue  # a new date or number does not replace a line that holds none on one shared word
        if subjects and old_subjects and not subjects & old_subjects:
            continue  # two lines about different things (T-14 and T-15, billing-svc and auth-svc)
        if held and old_held and qualified_apart(u, e.unit, common):
            continue  # "Project spending ceiling" does not update "Conference spending ceiling"
        if not held and _bare_identifiers(old_held) and not facts.attribute_words(u) & facts.attribute_words(e.unit):
            continue  # an identifier says nothing of what it is: "release branch" is no "build tag"
        # a word many lines say (ceiling, week) tells less about which line this one updates than
        # one only this line says (trip): "New ceiling for trip costs" updates the trip expenses,
        # not the conference ceiling beside them
        # fsum: exact, so the same whatever order the set `common` iterates in (a float sum in set
        # order differed in its last bit from one process's hash seed to another's, and a tie went
        # another way: the same transcript compacted to another projection)
        score = math.fsum(1 / len(near.get(w, ())) for w in common if near.get(w))
        if best is None or score >= best[0]:
            best = (score, i)
    return best[1] if best else None


_HANDOFF = re.compile(r"\b(?:" + _HANDOFF_CUE + r")\s+(?P<what>.+?)\s+(?:from|to)\s+\w", re.I)


def _handed_over(u: Unit) -> frozenset[str] | None:
    """The topic words of what a handoff line hands over ("Bob took over on-call from Alice":
    on-call), or None for a line that is no handoff: the line it updates must share one of them,
    not only the person who had it."""
    if "handed" not in u.memo:
        m = _HANDOFF.search(u.text)
        u.memo["handed"] = words_of(facts.analyse(m.group("what"), u.source)) if m else None
    return u.memo["handed"]  # type: ignore[no-any-return]


def _bare_identifiers(values: frozenset[str]) -> bool:
    """Values that are bare identifiers only (`valueslot.identifiers`): rc-41, pg-main-3."""
    return bool(values) and valueslot.identifiers(values, facts._IDENT, facts._NAME)


_STANDING = re.compile(r"from now on|going forward|henceforth|until further notice|from here on", re.I)


def standing_only(text: str) -> bool:
    """Every rule cue of the line (`kinds.RULE`) only says it holds from now on: no never, must,
    cap or limit."""
    cues = [m.group() for m in kinds.RULE.finditer(text)]
    return bool(cues) and all(_STANDING.fullmatch(c) for c in cues)


def qualified_apart(u: Unit, o: Unit, common: frozenset[str]) -> bool:
    """Each line puts another qualifier right before a word both say: "Project spending ceiling
    raised to $9000" and "Conference spending ceiling is $5000", "the prod cluster" and "the
    staging cluster" are about two things. A qualifier is a content word that neither line shares
    and that is no move or update verb; a line that says the shared word first ("batch size bumped
    to 128" after "Max batch size = 64") qualifies nothing. Asked of two lines that both hold a
    value: without one, the word before may be the value itself ("British spelling", then
    "American spelling")."""
    mine, theirs = _before_words(u), _before_words(o)
    return any(a != b and a not in theirs and b not in mine
               for w in common if (a := mine.get(w)) and (b := theirs.get(w)))


def _before_words(u: Unit) -> dict[str, str]:
    """Stem of each word of the line -> the stem of the content word right before its first
    occurrence in its phrase ("" when the word before is none, a stopword, a move or update verb,
    or across a punctuation mark: "GOAL STATE: Development" does not qualify development),
    memoised with the unit's analysis."""
    if "before" not in u.memo:
        out: dict[str, str] = {}
        prev = ""
        for m in _TOKEN.finditer(u.text.lower()):
            tok = m.group()
            if not tok[0].isalpha():  # a qualifier stands right before its word, in the same phrase
                prev = ""
                continue
            w = facts.CANON.get(stem := facts._stem(tok), stem)  # synonyms made one, as `words_of` does
            out.setdefault(w, prev if prev != w else "")
            content = tok not in facts.STOPWORDS and stem not in _MOVES and not _UPDATE.fullmatch(tok)
            prev = w if content else ""
        u.memo["before"] = out
    return u.memo["before"]  # type: ignore[no-any-return]


_TOKEN = re.compile(r"[a-z][a-z']+|[^\sa-z]")
"""A word (`facts._WORD`) or a character that is none (a digit, a punctuation mark)."""


def asks(u: Unit) -> bool:
    """The line is a question ("should we move the deadline to Friday?"): it proposes, it does not
    change, so it replaces nothing (it had replaced the deadline it asked about)."""
    return u.text.rstrip().endswith("?")


def _relation_of(u: Unit) -> str | None:
    """The canonical single-valued relation (`relation.canonical`) a line states between two
    named ends, or None."""
    found = relation_and_subject(u)
    return found[0] if found is not None else None


def relation_and_subject(u: Unit) -> tuple[str, str] | None:
    """(canonical relation, subject) of a line that states a single-valued relation between two
    named ends ("A routes to B": ("~rel:route", "a")), or None."""
    if "relation" not in u.memo:
        u.memo["relation"] = relation.relation_and_subject(u, facts.subjects(u))
    return u.memo["relation"]  # type: ignore[no-any-return]


def words_of(u: Unit, names: bool = True) -> frozenset[str]:
    """A unit's topic words for `updates`: content words and (`names`) the parts of its names, move
    and update verbs and days dropped, synonyms made one."""
    key = "update_words" if names else "update_said"
    if key not in u.memo:
        # the words of a name made of words (field-trip, access-code), not of one with digits (eu-north-5)
        parts = {p for n in u.names if names and not any(c.isdigit() for c in n)
                 for p in _NAME_PARTS.split(n) if p.isalpha() and len(p) > 2}
        words = {facts._stem(p) for p in parts} | set(u.words)
        u.memo[key] = frozenset(
            "~name" if w in _NAMING else facts.CANON.get(w, w) for w in words
            if w not in _MOVES and w not in kinds.DAYS and not _UPDATE.fullmatch(w))
    return u.memo[key]  # type: ignore[no-any-return]


_NAME_PARTS = re.compile(r"[-_ ]")


def _kinds_of(u: Unit) -> set[str]:
    """The kinds of value a unit holds, a day or a month beside a number read as a date ("we now
    ship on June 6" and "the date is 2027-12-11" hold one kind of value)."""
    return facts.value_kinds(facts.held_values(u)) | ({"date"} if u.words & kinds.DAYS else set())


def overrides(u: Unit, entries: Sequence[Entry | None], near: dict[str, set[int]]) -> list[int]:
    """The earlier choices a line overrides, newest first: "No, we are not doing A for X; do B"
    replaces "Plan for X: use A as the cache" and "We picked A for X" (issue 25: a rejected plan
    was still presented as current in 20 of 21 cases). An override (`OVERRIDE`) by the user or the
    agent replaces each earlier line of either that makes a choice (a decision, or `CHOICE`) about
    the same things (it names no identifier the override does not; neither names any, or both do) and
    says the option it overrides too (a content word or a name beyond the subject: "Redis",
    "JWT", "blue-green"), or names it right after its cue ("migrating off MySQL" overrides "We use
    MySQL"). A practice (`kinds.PRACTICE`: "We deploy with Helm") is a choice too, replaced only by
    an override that names it or shares two words with it. A rule is never replaced this way (a rule is replaced only by
    a rule); the replaced lines stay in the store, superseded."""
    if u.source not in ("user", "agent") or u.kind == "rule" or not fastre.found(kinds.OVERRIDE, u.text):
        return []
    subjects = facts.subjects(u)
    mine = _said(u)
    option = _rejected_option(u)
    option = "" if ident_like(frozenset((option,))) else option  # an option, not a thing (orders-api)
    out = []
    for i in sorted({i for w in words_of(u) for i in near.get(w, ())}, reverse=True):
        e = entries[i]
        if e is None or e.unit.source not in ("user", "agent") or e.unit.kind == "rule":
            continue
        o = e.unit
        theirs = facts.subjects(o)
        if bool(theirs) != bool(subjects) or (theirs and (not theirs & subjects or ident_like(theirs - subjects))):
            continue  # about another thing: "| B | API style | REST | rejected |" and "A API style = gRPC"
        # what both say beyond the thing they are about: the option ("Redis", "JWT", "blue-green"),
        # or the option the override names right after its cue ("migrating off MySQL": MySQL)
        named = bool(option) and option in _said(o)
        shared = len(mine & _said(o))
        # one shared word, or two beside a shared thing; two when it names what it drops and that is
        # not this choice's option ("We dropped the flaky test" and "We use pytest for the tests")
        if not named and shared < max(1 + bool(theirs), 1 + bool(option)):
            continue
        if o.kind == "decision" or fastre.found(kinds.CHOICE, o.text) or (
                (named or shared >= 2) and fastre.found(kinds.PRACTICE, o.text)):
            out.append(i)
    return out


_REJECTED = re.compile(
    r"\b(?:decided against|" + kinds.MOVED_OFF + r"|not (?:using|going with)"
    r"|replac(?:ed|ing|e)"
    r"|drop(?:ped|ping)?|scrap(?:ped|ping)?|abandon(?:ed|ing)?|reject(?:ed|ing)?|ruled out|won't use)"
    r"\s+(?:the\s+|our\s+)?(?P<option>[A-Za-z][\w.-]*\w)", re.I)


def _rejected_option(u: Unit) -> str:
    """The option an override names right after its cue ("We're migrating off MySQL to Postgres":
    mysql), lowercase as `_said` holds a name, or "": the choice that named it is the one
    overridden, although the two share no other word ("We use MySQL")."""
    m = _REJECTED.search(u.text)
    if m is None:
        return ""
    option = m.group("option").lower()
    if option in _REFERENTS:
        return ""  # "We abandoned the idea": the choice it drops is named elsewhere, or by what they share
    return option if option in facts.subjects(u) else facts._stem(option)


_REFERENTS = frozenset(("idea", "approach", "plan", "proposal", "option", "choice", "decision", "that", "this", "it",
                        "them", "those", "these"))
"""Words after an override's cue that point back at the choice without naming its option."""


_CHOOSING = frozenset(("plan", "plann", "decision", "decid", "option", "pick", "chose", "chosen", "choic", "agre",
                       "lean", "drop", "dropp", "revert", "reject", "tri", "get", "settl", "opt", "opte", "change",
                       "hold", "work", "accept"))
"""Stems of the words of choosing and overriding ("plan", "picked", "drop", "reverting"): two lines
that share only these share no option."""


def ident_like(names: frozenset[str]) -> bool:
    """One of `names` is an identifier of a thing (orders-api, pg-main-3, cfg.cache), not an
    acronym or a product's name (API, JWT, gRPC), which many things share: a line that names one
    the override does not name is about another thing."""
    return any(not n.isalpha() for n in names)


def _said(u: Unit) -> frozenset[str]:
    """A line's content words but those of choosing, its subject names and its values (lowercase):
    what an override and the choice it overrides may share."""
    if "said" not in u.memo:
        words = words_of(u, names=False) - _CHOOSING
        u.memo["said"] = words | facts.subjects(u) | {v.lower() for v in facts.held_values(u)}
    return u.memo["said"]  # type: ignore[no-any-return]

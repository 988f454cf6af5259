"""Where a fold finds the earlier lines a new unit may replace (`ledger.fold`'s rules, looked up
by index rather than by scanning).

Why: a compaction folds each new unit into every current row of the run's store. Scanning the
rows that share a term with the unit made a fold quadratic where a term is common (a run's
project name, a value such as `1`): a fact extracted at compaction cost 1.6 s per 100k tokens of
transcript on real sessions, against a goal of 100 ms (issue 25). Each rule is looked up where
its condition can only hold:
- same key: by key (the latest line with it);
- same subject (`same_subject`): by the exact set of subject names, since the rule asks for equal ones;
- a value restated beside a new one (`restates_value`): by the unit's values, which the earlier
  line must share;
- a correction (`corrected`): the lines that share a subject name or a value (the only scan,
  and only for a unit that corrects);
- a reworded update: by normalised topic (`reword.replaces`); a self-declared update said in
  other words: by topic word (`reword.updates`).

Each answer is the one the scanning rules gave (tests/test_context_extraction_snapshot.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from longrun.context import facts, fastre, reword
from longrun.context.facts import Unit
from longrun.context.kinds import OVERRIDE

if TYPE_CHECKING:
    from longrun.context.ledger import Entry

K = TypeVar("K")
C = TypeVar("C", list[int], set[int])


class Shared(dict[K, C], Generic[K, C]):
    """An index of key -> lines (a list or a set) whose copies share the containers until one of
    them changes a key's (copy on write): a compaction copies its store's whole index twice (its
    fold's and the next snapshot's, `foldcache`) and changes a few keys of it, and copying every
    container was most of what a compaction cost before it read anything (issue 25)."""

    __slots__ = ("owned",)

    def __init__(self) -> None:
        super().__init__()
        self.owned: set[K] = set()
        """The keys whose container this index alone holds (made or copied here since its last fork)."""

    def fork(self) -> Shared[K, C]:
        """A copy sharing every container with this index; neither changes a shared one in place."""
        out: Shared[K, C] = Shared()
        out.update(self)
        self.owned = set()
        return out

    def writable(self, key: K, empty: Callable[[], C]) -> C:
        """The lines of `key` to change in place: new (`empty()`), or copied first when shared."""
        lines = self.get(key)
        if lines is None:
            lines = self[key] = empty()
        elif key in self.owned:
            return lines
        else:
            lines = self[key] = type(lines)(lines)
        self.owned.add(key)
        return lines


class Earlier:
    """The lines folded so far (`entries`, None where a later line replaced one) and their indexes."""

    def __init__(self) -> None:
        self.entries: list[Entry | None] = []
        self.by_key: dict[tuple[str, frozenset[str]], int] = {}
        self.near: Shared[str, list[int]] = Shared()
        """Subject name or held value -> the lines that have it, in order."""
        self.by_subjects: Shared[frozenset[str], list[int]] = Shared()
        """Exact set of subject names -> the lines about them, in order."""
        self.by_topic: dict[frozenset[str], int] = {}
        """Normalised topic (`reword.topic`) -> the latest line with it."""
        self.by_word: Shared[str, set[int]] = Shared()
        """Topic word (`reword.words_of`) of a user's or the agent's line -> the lines that say it."""

    def add(self, e: Entry) -> None:
        i = len(self.entries)
        self.entries.append(e)
        u = e.unit
        words, topic, subjects, terms = _record(u)
        self.by_key[(u.where, words)] = i
        if topic is not None and u.source != "note":
            self.by_topic[topic] = i
        append_to(self.near, terms, i)
        append_to(self.by_subjects, (subjects,), i)
        if u.source in ("user", "agent"):
            add_to(self.by_word, reword.words_of(u), i)

    def copy(self) -> Earlier:
        """An independent copy (a fold changes its lines and indexes; `foldcache` keeps the original)."""
        out = Earlier()
        out.entries = list(self.entries)
        out.by_key = dict(self.by_key)
        out.near = self.near.fork()
        out.by_subjects = self.by_subjects.fork()
        out.by_topic = dict(self.by_topic)
        out.by_word = self.by_word.fork()
        return out

    def drop(self, i: int, key_before: int | None, topic_before: int | None) -> None:
        """Take line `i` out as if it had never been added: unlike a fold's replacement (which
        leaves its key pointing at nothing), the key and topic then point at the latest other line
        with them (`key_before`, `topic_before`, None: no other), and no index lists it."""
        e = self.entries[i]
        assert e is not None
        u = e.unit
        words, topic, subjects, terms = _record(u)
        self.entries[i] = None
        if self.by_key.get((u.where, words)) == i:
            _point(self.by_key, (u.where, words), key_before)
        if topic is not None and u.source != "note" and self.by_topic.get(topic) == i:
            _point(self.by_topic, topic, topic_before)
        for term in terms:
            _unlist(self.near, term, i)
        _unlist(self.by_subjects, subjects, i)
        if u.source in ("user", "agent"):
            for w in reword.words_of(u):
                held = self.by_word.get(w)
                if held is not None and i in held:
                    held = self.by_word.writable(w, set)
                    held.discard(i)
                    if not held:
                        del self.by_word[w]

    def _alive(self, i: int) -> bool:
        e = self.entries[i]
        return e is not None and e.unit.source != "note"

    def nearby(self, u: Unit) -> list[int]:
        """The current lines (notes aside) that share a subject name or a held value with `u`, newest first."""
        return sorted({i for t in facts.subjects(u) | facts.held_values(u) for i in self.near.get(t, ()) if self._alive(i)},
                      reverse=True)

    def same_key(self, u: Unit) -> int | None:
        i = self.by_key.get(u.key)
        if i is None or self.entries[i] is None or not u.key[1]:
            return None
        return i

    def restates_value(self, u: Unit) -> bool:
        """The unit repeats a value an earlier line about one of its names stated, beside a new
        value ("backoff 63s, previous 9m"): a correction without a cue word."""
        if not u.names:
            return False
        mine, held = facts.subjects(u), facts.held_values(u)
        if len(held) < 2:
            return False
        for v in held:
            for i in self.near.get(v, ()):
                e = self.entries[i]
                if e is None or e.unit.source == "note":
                    continue
                theirs = facts.subjects(e.unit)
                if theirs and theirs <= mine and facts.held_values(e.unit) & held and (held - facts.held_values(e.unit)):
                    return True
        return False

    def same_subject(self, u: Unit, seq: int = 0) -> int | None:
        """The latest earlier line about the same subjects (and source call) and the same attribute
        (`facts.attributes`, synonyms included, or neither has one) with a value of the same kind
        and another value: the same fact said again in other words, whose latest value wins."""
        subjects = facts.subjects(u)
        mine = facts.held_values(u)
        if not subjects or not mine:
            return None
        kinds = facts.value_kinds(mine)
        attrs = facts.attributes(u)
        for i in reversed(self.by_subjects.get(subjects, ())):
            e = self.entries[i]
            if e is None or e.unit.source == "note":
                continue
            o = e.unit
            theirs = facts.held_values(o)
            if o.where != u.where or not theirs or theirs == mine:
                continue
            if not (kinds & facts.value_kinds(theirs)):
                continue
            other = facts.attributes(o)
            if (attrs or other) and not (attrs & other):
                continue
            if not facts.said_alike(u, o):
                continue
            if _sibling(u, e, seq):
                return None  # another record of the same output (`corrected`)
            return i
        return None

    def corrected(self, u: Unit, seq: int = 0) -> list[int]:
        """The earlier entries a correction replaces, best match first: those that share a subject
        name or a value with it, and either hold a value it repeats (the old value: "not 8080",
        "was A") or say the same attribute (`facts.attributes`, synonyms included) with the same
        kind of value; whose value differs. A correction replaces every such line (two provisional
        values of one endpoint both go), not only the closest. A tool's line read from transcript
        entry `seq` corrects no line of the same output: a listing's or a file's lines are records
        side by side (two hook commands under one key, two directory entries), not a line and its
        correction."""
        return _corrected(u, self.entries, self.nearby(u), seq)

    def reworded(self, u: Unit) -> int | None:
        return reword.replaces(u, self.by_topic, self.entries)

    def overridden(self, u: Unit) -> list[int]:
        """The earlier choices an override replaces (`reword.overrides`), looked up by topic word."""
        return reword.overrides(u, self.entries, self.by_word)

    def updated(self, u: Unit) -> int | None:
        """A self-declared update said in other words (`reword.updates`), looked up by topic word."""
        return reword.updates(u, self.entries, self.by_word)


def append_to(index: Shared[K, list[int]], keys: Iterable[K], i: int) -> None:
    """`index.writable(key, list).append(i)` for each of `keys`, in one loop: `Earlier.add` does it
    for every term of every line a compaction indexes (twice: its fold's index and the next
    snapshot's), and a call per key was a third of what adding a line cost (issue 25)."""
    owned = index.owned
    for key in keys:
        held = index.get(key)
        if held is None:
            index[key] = [i]
        elif key in owned:
            held.append(i)
            continue
        else:
            index[key] = [*held, i]
        owned.add(key)


def add_to(index: Shared[K, set[int]], keys: Iterable[K], i: int) -> None:
    """`index.writable(key, set).add(i)` for each of `keys` (`append_to`, for an index of sets)."""
    owned = index.owned
    for key in keys:
        held = index.get(key)
        if held is None:
            index[key] = {i}
        elif key in owned:
            held.add(i)
            continue
        else:
            mine = index[key] = set(held)
            mine.add(i)
        owned.add(key)


def _point(index: dict[K, int], key: K, to: int | None) -> None:
    if to is None:
        index.pop(key, None)
    else:
        index[key] = to


def _unlist(index: Shared[K, list[int]], key: K, i: int) -> None:
    lines = index.get(key)
    if lines is not None and i in lines:
        lines = index.writable(key, list)
        lines.remove(i)
        if not lines:
            del index[key]


def record(u: Unit) -> tuple[frozenset[str], frozenset[str] | None, frozenset[str], tuple[str, ...]]:
    """`_record`, for `foldcache`: the key words, topic, subjects and terms a line is indexed by."""
    return _record(u)


def _record(u: Unit) -> tuple[frozenset[str], frozenset[str] | None, frozenset[str], tuple[str, ...]]:
    """What `Earlier.add` indexes a unit by, but its call: its key's words, its topic, its subjects
    and its terms (subjects and held values). Memoised with the unit's analysis, which every row of
    the same text shares (`facts.analyse`): each compaction re-indexes every current row."""
    rec = u.memo.get("index")
    if rec is None:
        topic = reword.topic(u)
        subjects = facts.subjects(u)
        rec = u.memo["index"] = (u.names | u.words, topic[0] if topic is not None else None, subjects,
                                 tuple(subjects | facts.held_values(u)))
    return rec


def _corrected(u: Unit, entries: list[Entry | None], nearby: Sequence[int], seq: int = 0) -> list[int]:
    found: list[tuple[int, int]] = []
    attrs = facts.attributes(u)
    kinds = facts.value_kinds(facts.held_values(u))
    old = reword.old_terms(u)
    overrides = fastre.found(OVERRIDE, u.text)
    for i in nearby:
        e = entries[i]
        if e is None:
            continue
        o = e.unit
        if o.where != u.where and u.source != "tool" and o.source == "tool":
            continue
        shared = facts.subjects(o) & facts.subjects(u)
        if shared and (_other_subjects(u, o) or _fields_of_others(shared, facts.subjects(u), facts.subjects(o))):
            continue  # "B routes to C instead of D" corrects B's route, not "A routes to B"
        names = len(shared)
        shared_values = facts.held_values(o) & facts.held_values(u)
        if not (names or shared_values):
            continue  # a correction names its subject or the value it replaces
        if overrides and not shared_values and not (facts.subjects(o) <= facts.subjects(u) or reword.ident_like(shared)):
            continue  # an override sharing only a product's name (gRPC) with a choice about another thing
        # the value it says it replaces ("instead of B", "from B to C"), said as a name or a value
        named_old = old & (facts.subjects(o) | {v.lower() for v in facts.held_values(o)})
        same_attr = attrs & facts.attributes(o)
        if named_old and not (facts.subjects(o) & facts.subjects(u)) - named_old and (
                (facts.subjects(o) | facts.subjects(u)) - named_old or not same_attr):
            # it must be about the same thing as well: a name both say beyond the old value, or, for
            # two lines about nothing but that value, the same words ("The queue is SQS" and "We
            # moved the queue from SQS to RabbitMQ"; not "A routes to D" for "B routes to C instead
            # of D", nor "| D | routes to | E |" for it)
            named_old = frozenset()
        same_kind = bool(kinds & facts.value_kinds(facts.held_values(o))) or not (u.values or o.values) or _renames(u, o)
        if not (shared_values or named_old or (same_attr and same_kind)):
            continue
        if not ((facts.held_values(u) - facts.held_values(o)) or (u.names - o.names)):
            continue  # says nothing new: not a correction of this line
        found.append((2 * names + len(same_attr) + 3 * len(shared_values | named_old), i))
    found.sort(key=lambda f: (-f[0], -f[1]))
    if seq and u.source == "tool":
        # a line of the output it best matches is another record of it (two hook commands under
        # one key, two directory entries): not a correction, of that line or of a worse match
        sibling = [_sibling(u, entries[i], seq) for _, i in found]  # type: ignore[arg-type]
        if sibling and sibling[0]:
            return []
        return [i for (_, i), same in zip(found, sibling, strict=True) if not same]
    return [i for _, i in found]


def _sibling(u: Unit, e: Entry, seq: int) -> bool:
    """`u`, a tool's line read from transcript entry `seq`, and `e` are lines of one output."""
    return bool(seq) and u.source == e.unit.source == "tool" and e.source_seq == seq


def _other_subjects(u: Unit, o: Unit) -> bool:
    """Both lines state a single-valued relation (`reword.relation_and_subject`) of two different
    things: the name they share is one's subject and the other's end."""
    mine, theirs = reword.relation_and_subject(u), reword.relation_and_subject(o)
    return mine is not None and theirs is not None and mine[1] != theirs[1]


_FIELD = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
"""A lowercase snake_case name: a field of a thing (schema_md5, retry_backoff, launch_date)."""


def _fields_of_others(shared: frozenset[str], mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """The two lines share only field names, each of another thing: "pebble-auth schema_md5: A ->
    B (final)" corrects pebble-auth's checksum, not "Set russet-scheduler.schema_md5=C"."""
    return all(_FIELD.fullmatch(n) for n in shared) and bool(mine - shared) and bool(theirs - shared)


def _renames(u: Unit, o: Unit) -> bool:
    """A line that holds no value and names one new thing, where the earlier line held one bare
    identifier as its value: the new name is that value's successor ("the X codename changed to
    NEW-2" corrects "The codename for X is OLD-1"). Narrow on purpose: wider, cue words in long
    lines of code and prose linked them to unrelated lines."""
    held = facts.held_values(o)
    new = facts.subjects(u) - facts.subjects(o)
    return not u.values and len(new) == 1 and len(held) == 1 and facts.value_kinds(held) == {"other"}


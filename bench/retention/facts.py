"""The facts of one conversation: probed ones and their unprobed look-alikes, placed in turns.

Why probes and distractors come from one maker: if probed facts had a shape of their own, a
compactor could learn the shape instead of keeping facts. `Facts.value/relation/tool/correction/
status` each make one fact of a category, probed or not, in a randomly chosen phrasing, and place
its line(s) in a turn as the user, the assistant, or a tool result. Placement is the caller's
choice (position 0..1 and speaker), so probes can be spread early, middle and late on purpose.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from bench.retention import phrasing as ph
from bench.retention import tooling
from bench.retention import words as w
from bench.retention.probe import Probe, answers
from bench.retention.score import lines as score_lines
from bench.retention.tooling import Call

CORRECTION_SHAPES = (9, 2, 2, 2)
"""How often a correction is an attribute said again (`CORRECTION_TEMPLATES`), a relation re-pointed,
a codename changed, or a value corrected inside a line of dozens of pairs."""


@dataclass
class Turn:
    """One user turn and the assistant's work on it."""

    user: list[str] = field(default_factory=list)
    pre: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    post: list[str] = field(default_factory=list)


class Facts:
    """Makes facts and puts them into `turns`; probed ones are appended to `probes`."""

    def __init__(self, rng: random.Random, namer: w.Namer, turns: list[Turn], join: float = 0.5) -> None:
        self.r = rng
        self.n = namer
        self.turns = turns
        self.join = join  # chance a fact for a tool result joins an existing call of its kind
        self.probes: list[Probe] = []
        self.services: list[str] = []
        self.used_attr: set[tuple[str, str]] = set()
        self.used_pairs: set[tuple[str, str]] = set()
        self.values: set[str] = set()
        self.targets: dict[str, list[str]] = {}

    # -- placement -----------------------------------------------------------------------------
    def turn(self, pos: float) -> Turn:
        return self.turns[min(len(self.turns) - 1, max(0, int(pos * len(self.turns))))]

    def put(self, pos: float, speaker: str, line: str, kind: str = "value") -> str:
        """Place `line`; returns it as it appears in the transcript (a grep hit gets its prefix)."""
        t = self.turn(pos)
        if speaker == "user":
            t.user.insert(self.r.randint(0, len(t.user)), line)
        elif speaker == "assistant":
            side = t.pre if self.r.random() < 0.4 else t.post
            side.insert(self.r.randint(0, len(side)), line)
        else:
            calls = [c for c in t.calls if c.kind == kind and c.name != "grep"]
            if calls and self.r.random() < self.join:
                c = self.r.choice(calls)
                c.lines.insert(self.r.randint(2 if c.name == "read_file" else 0, len(c.lines)), line)
            else:
                c = tooling.wrap_lines([line], self.r, kind)
                t.calls.insert(self.r.randint(0, len(t.calls)), c)
                return next(x for x in c.lines if x.endswith(line))
        return line

    def record(self, probe: bool, **kw: object) -> None:
        if probe:
            self.probes.append(Probe(**kw))  # type: ignore[arg-type]

    # -- values --------------------------------------------------------------------------------
    def fresh(self, make: object) -> str:
        for _ in range(200):
            v = make(self.r) if callable(make) else str(make)
            if v.lower() not in self.values:
                self.values.add(v.lower())
                return v
        raise RuntimeError("value space exhausted")

    def service(self) -> str:
        if self.services and self.r.random() < 0.55:
            return self.r.choice(self.services)
        s = self.n.service()
        self.services.append(s)
        return s

    def subject_attr(self) -> tuple[str, ph.Attr]:
        for _ in range(100):
            if self.r.random() < 0.3:
                s, a = self.n.param(), ph.PARAM_ATTR
            else:
                s, a = self.service(), self.r.choice(ph.SERVICE_ATTRS)
            if (s, a.key) not in self.used_attr:
                self.used_attr.add((s, a.key))
                return s, a
        raise RuntimeError("no free attribute")

    def target(self, kind: str) -> str:
        """The other end of a relation: a service, region, database, queue or cluster."""
        if kind == "runs_in":
            return self.r.choice(w.REGIONS)
        pool = self.targets.setdefault(kind, [])
        if pool and self.r.random() < 0.3:
            return self.r.choice(pool)
        make = {"reads_from": self.n.db, "publishes_to": self.n.queue, "deployed_to": self.n.cluster}.get(kind, self.service)
        b = make()
        pool.append(b)
        return b

    # -- the five categories --------------------------------------------------------------------
    def value(self, pos: float, probe: bool, speaker: str = "user") -> None:
        s, a = self.subject_attr()
        v = self.fresh(a.make)
        tid, render = self.r.choice(ph.VALUE_TEMPLATES)
        line = self.put(pos, speaker, render(s, a, v))
        self.record(probe, category="value", question=a.question.format(s=s), subject=s, answer=v, template=tid,
                    speaker=speaker, position=pos, statement=line)

    def relation(self, pos: float, probe: bool, speaker: str) -> None:
        for _ in range(50):
            kind = self.r.choice(tuple(ph.RELATIONS))
            a, b = self.service(), self.target(kind)
            if a != b and (a, b) not in self.used_pairs and (a, kind) not in self.used_attr:
                break
        else:
            raise RuntimeError("no free relation")
        self.used_pairs.add((a, b))
        self.used_attr.add((a, kind))
        question, templates = ph.RELATIONS[kind]
        tid, render = self.r.choice(templates)
        line = self.put(pos, speaker, render(a, b), "relation")
        self.record(probe, category="relation", question=question.format(s=a), subject=a, answer=b, template=tid,
                    speaker=speaker, position=pos, statement=line)

    def tool(self, pos: float, probe: bool) -> None:
        res = tooling.short_result(self.n, self.r)
        if res.answer.lower() in self.values:
            return self.tool(pos, probe)
        self.values.add(res.answer.lower())
        t = self.turn(pos)
        t.calls.insert(self.r.randint(0, len(t.calls)), res.call)
        line = next(x for x in res.call.lines if answers(x, res.subject, res.answer))
        self.record(probe, category="tool", question=res.question, subject=res.subject, answer=res.answer,
                    template=res.template, speaker="tool", position=pos, statement=line)
        return None

    def correction(self, pos: float, probe: bool, speaker: str) -> None:
        first = self.r.uniform(0.0, max(0.01, pos - 0.1))
        if speaker == "tool":  # a probe re-run after a deploy reports the new value
            s = self.n.service()
            old, new = self.fresh(w.semver), self.fresh(w.semver)
            url = {"url": f"http://{s}.internal/version"}
            body = '{{"service":"{s}","version":"{v}","build":{b}}}'
            self.turn(first).calls.append(Call("http_probe", dict(url), [body.format(s=s, v=old, b=self.r.randint(100, 999))]))
            line = body.format(s=s, v=new, b=self.r.randint(1000, 9999))
            self.turn(pos).calls.append(Call("http_probe", dict(url), [line]))
            self.record(probe, category="correction", question=f"Which version does {s} report now?", subject=s,
                        answer=new, superseded=(old,), template="corr.reprobe", speaker="tool", position=pos,
                        statement=line)
            return
        shape = self.r.choices(("attr", "repoint", "rename", "pair_fix"), CORRECTION_SHAPES)[0]
        if shape != "attr":
            getattr(self, shape)(first, pos, probe, speaker)
            return
        s, a = self.subject_attr()
        chain = [self.fresh(a.make) for _ in range(3 if self.r.random() < 0.2 else 2)]
        _, prov = self.r.choice(ph.PROVISIONAL_TEMPLATES)
        self.put(first, self.r.choice(("user", "assistant")), prov(s, a, chain[0]))
        if len(chain) == 3:
            mid = self.r.uniform(min(first + 0.05, pos - 0.05), pos - 0.05)
            _, fix = self.r.choice(ph.CORRECTION_TEMPLATES[:7])
            self.put(mid, self.r.choice(("user", "assistant")), fix(s, a, chain[0], chain[1]))
        tid, fix = self.r.choice(ph.CORRECTION_TEMPLATES)
        line = self.put(pos, speaker, fix(s, a, chain[-2], chain[-1]))
        self.record(probe, category="correction", question=f"What is the current {a.label} of {s}?", subject=s,
                    answer=chain[-1], superseded=tuple(chain[:-1]), template=tid, speaker=speaker, position=pos,
                    statement=line)

    def repoint(self, first: float, pos: float, probe: bool, speaker: str) -> None:
        """A single-valued relation stated, then re-pointed in another structure."""
        for _ in range(50):
            kind = self.r.choice(tuple(ph.REPOINT_VERBS))
            a, b, c = self.service(), self.target(kind), self.target(kind)
            if len({a, b, c}) == 3 and (a, kind) not in self.used_attr:
                break
        else:
            raise RuntimeError("no free relation")
        self.used_attr.add((a, kind))
        self.used_pairs.update({(a, b), (a, c)})
        _, old = self.r.choice(ph.RELATIONS[kind][1])
        self.put(first, self.r.choice(("user", "assistant")), old(a, b), "relation")
        tid, new = self.r.choice(ph.REPOINT_TEMPLATES)
        line = self.put(pos, speaker, new(a, ph.REPOINT_VERBS[kind], b, c), "relation")
        self.record(probe, category="correction", question=ph.RELATIONS[kind][0].format(s=a) + " (now)", subject=a,
                    answer=c, superseded=(b,), template=tid, speaker=speaker, position=pos, statement=line)

    def rename(self, first: float, pos: float, probe: bool, speaker: str) -> None:
        """A codename stated, then changed in other words."""
        s = self.service()
        for _ in range(50):
            if (s, "codename") not in self.used_attr:
                break
            s = self.n.service()
        self.used_attr.add((s, "codename"))
        old, new = (self.n.take(lambda: f"{self.r.choice(w.NOUN).upper()}-{self.r.randint(100, 999)}") for _ in range(2))
        self.put(first, self.r.choice(("user", "assistant")), self.r.choice(ph.RENAME_OLD)(s, old))
        tid, fix = self.r.choice(ph.RENAME_TEMPLATES)
        line = self.put(pos, speaker, fix(s, old, new))
        self.record(probe, category="correction", question=f"What is the current codename of {s}?", subject=s,
                    answer=new, superseded=(old,), template=tid, speaker=speaker, position=pos, statement=line)

    def pair_fix(self, first: float, pos: float, probe: bool, speaker: str) -> None:
        """A line of dozens of `KEY=VALUE` pairs, then a later, shorter line of pairs that restates
        some of them as they were and one with a new value (the probe)."""
        r = self.r
        syntax = r.choice(("eq", "pipe", "colon"))
        sep, joint = {"eq": ("; ", "="), "pipe": (" | ", "="), "colon": (", ", ": ")}[syntax]
        makes = (w.port, w.semver, w.duration, w.percent, w.number)
        make = r.choice(makes)
        pairs = [(self.n.param(), self.fresh(r.choice(makes))) for _ in range(r.randint(24, 60))]
        at = r.randrange(len(pairs))
        k, old = pairs[at][0], self.fresh(make)
        pairs[at] = (k, old)
        header = r.choice(("Authoritative records:", "CURRENT PARAMETERS", "Config dump, all current:"))
        body = sep.join(f"{x}{joint}{v}" for x, v in pairs)
        self.put(first, "user", f"{header}\n{body}" if header.isupper() or r.random() < 0.5 else f"{header} {body}")
        new = self.fresh(make)
        again = [*r.sample([p for i, p in enumerate(pairs) if i != at], r.randint(3, 12)),
                 *((self.n.param(), self.fresh(r.choice(makes))) for _ in range(r.randint(0, 6))), (k, new)]
        r.shuffle(again)
        header = r.choice(ph.RECORD_HEADERS)
        body = sep.join(f"{x}{joint}{v}" for x, v in again)
        line = f"{header}\n{body}" if header.isupper() or r.random() < 0.5 else f"{header} {body}"
        self.put(pos, "user" if speaker == "tool" else speaker, line)
        self.record(probe, category="correction", question=f"What is {k} set to now?", subject=k, answer=new,
                    superseded=(old,), template=f"pairfix-{syntax}", speaker=speaker, position=pos,
                    statement=next(x for x in score_lines([line]) if answers(x, k, new)))

    def decision(self, pos: float, probe: bool, speaker: str) -> None:
        """A plan or decision about a service, then replaced by another (a rejected plan, an
        overridden decision) in one of several structures; the old and the new lines far apart,
        so that a fold can fall between them. The probe asks for the plan in force."""
        r = self.r
        s = self.n.service()
        topic = r.choice(tuple(ph.DECISION_TOPICS))
        key, options = ph.DECISION_TOPICS[topic]
        old, new = r.sample(options, 2)
        tid, said = r.choice(ph.DECISION_TEMPLATES)
        first = r.uniform(0.0, max(0.01, pos - 0.15))
        n = r.randint(10, 99)
        line = ""
        for when, template in said:
            text = template.format(s=s, t=topic, k=key, a=old, b=new, n=n, m=n + 1)
            at = {"old": first, "mid": r.uniform(first, pos - 0.1), "new": pos}[when]
            who = speaker if when == "new" else r.choice(("user", "user", "assistant"))
            put = self.put(at, "user" if who == "tool" else who, text)
            line = put if when == "new" else line
        self.record(probe, category="correction", question=f"Which {topic} is {s} using now?", subject=s, answer=new,
                    superseded=(old,), template=tid, speaker="user" if speaker == "tool" else speaker, position=pos,
                    statement=line)

    def status(self, pos: float, probe: bool, speaker: str) -> None:
        i = self.n.task()
        kind = self.r.choices(("state", "blocked", "next"), (50, 25, 25))[0]
        if kind == "state":
            v = self.r.choice(w.STATUS_WORDS[:1] * 3 + w.STATUS_WORDS)
        elif kind == "blocked":
            v = self.r.choice(w.BLOCKERS)
        else:
            v = self.fresh(w.action)
        tid, render = self.r.choice(ph.STATUS_TEMPLATES[kind])
        text = render(i, v, self.r)
        if kind == "state" and v in ("done", "merged") and self.r.random() < 0.4:
            self.put(self.r.uniform(0.0, max(0.01, pos - 0.05)), self.r.choice(("user", "assistant")),
                     ph.PROGRESS_LINE.format(i=i), "status")
        line = self.put(pos, speaker, text, "status")
        self.record(probe, category="status", question=ph.STATUS_QUESTIONS[kind].format(s=i), subject=i, answer=v,
                    template=tid, speaker=speaker, position=pos, statement=line)

    def unrelated(self, pos: float, about: str | None) -> None:
        """A line flagged unrelated or obsolete; about a probed subject (with a fresh wrong value)
        or a look-alike. Its value is never an answer."""
        if about is None:
            s, a = self.subject_attr()
        else:
            s, a = about, self.r.choice(ph.SERVICE_ATTRS)
        line = self.r.choice(ph.UNRELATED_TEMPLATES)(s, a.label, self.fresh(a.make))
        self.put(pos, self.r.choice(("user", "user", "assistant")), line)

    # -- lines that state dozens of facts (issue 25, causes 1 and 7) ------------------------------
    def records(self, pos: float, probed: int, speaker: str = "user") -> None:
        """One message whose line states 24-60 facts in one syntax (`KEY=VALUE; ...`, `KEY=VALUE |
        ...`, `key: value, ...` or `a -> b, ...` routing edges) under a header said inline or on
        the line before; `probed` of its pairs are probes, the last pair always (a line cap cut
        the tail first)."""
        r = self.r
        syntax = r.choice(("eq", "pipe", "colon", "arrow"))
        sep = {"eq": "; ", "pipe": " | ", "colon": ", ", "arrow": ", "}[syntax]
        makes = (w.port, w.semver, w.duration, w.percent, w.number, lambda g: w.hexstr(g, 10))
        pairs: list[tuple[str, str]] = []
        for _ in range(r.randint(24, 60)):
            if syntax == "arrow":
                pairs.append((self.n.service(), self.service()))
            else:
                pairs.append((self.n.param(), self.fresh(r.choice(makes))))
        joint = {"eq": "=", "pipe": "=", "colon": ": ", "arrow": " -> "}[syntax]
        body = sep.join(f"{k}{joint}{v}" for k, v in pairs)
        header = r.choice(("ROUTING TABLE", "Routing edges (authoritative):") if syntax == "arrow" else
                          ("Authoritative records:", "CURRENT PARAMETERS", "Config dump, all current:"))
        line = body if header.isupper() or r.random() < 0.5 else f"{header} {body}"
        self.put(pos, speaker, line if line != body else f"{header}\n{body}")
        for i in sorted({len(pairs) - 1, *r.sample(range(len(pairs) - 1), probed - 1)}):
            k, v = pairs[i]
            question = f"Where does {k} route to?" if syntax == "arrow" else f"What is {k} set to?"
            self.record(True, category="value", question=question, subject=k, answer=v, template=f"records-{syntax}",
                        speaker=speaker, position=pos,
                        statement=next(x for x in score_lines([line]) if answers(x, k, v)))

"""`conversation(seed, shape)`: one long synthetic software-project conversation and its 75 probes.

Why generated and not recorded: the held-out benchmark cannot be seen, so what we can control is
a generator with the same ingredients (five fact categories, chatter, boilerplate, long tool
output, unrelated and obsolete lines, corrections) and real variety: names, values, phrasings,
placements and order all come from the seed. Three shapes:

- `sparse`: 75 probed facts and some look-alikes drowned in acknowledgements, small talk, CI
  noise, logs, file dumps and test runs. The issue's target: >= 98% kept at 25% of the size.
- `dense`: the same categories, but most of the text is facts (many per message, most of them
  unprobed look-alikes) and there is little filler, so even 66% of the size is tight
  (target >= 80%).
- `decisions`: the sparse shape whose 15 corrections are overridden decisions and rejected plans
  (`Facts.decision`: a plan then "no, we are not doing A", a decision then reverted, options with
  one picked then replaced, ADR records, a decision-log table, an agreement then a change of plan),
  the old and the new far apart (issue 25: a rejected plan still presented as current in 20 of 21
  cases). Its figure that matters is "superseded as current" (target 0), with the new plan kept.

Sizes are measured in the unit `longrun compact --budget` uses (`estimate_messages` on
`Message.from_wire`), drawn per seed (36k-54k sparse, 40k-58k dense) and asserted to be within 30k-60k.
The messages are exactly what `longrun compact` reads from JSONL: user/assistant text blocks,
assistant `tool_use` blocks and user `tool_result` blocks with matching ids.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from bench.retention import noise
from bench.retention import phrasing as ph
from bench.retention import words as w
from bench.retention.facts import Facts, Turn
from bench.retention.probe import CATEGORIES, Probe
from longrun.context import estimate_messages, estimate_text
from longrun.models.blocks import Message

SHAPES = ("sparse", "dense", "decisions")
PROBES_PER_CATEGORY = 15
RECORD_PROBES = 4
"""Of a conversation's value probes, how many are pairs in lines that state dozens of facts (two
lines, two probes each; `Facts.records`)."""
MIN_TOKENS, MAX_TOKENS = 30_000, 60_000
TARGET_RANGE = {"sparse": (36_000, 54_000), "dense": (40_000, 58_000), "decisions": (36_000, 54_000)}  # per seed

SPEAKERS = {  # where a probed fact of each category is stated (weights user/assistant/tool)
    "value": (1, 0, 0), "relation": (4, 3, 3), "tool": (0, 0, 1), "correction": (9, 7, 4), "status": (7, 8, 5),
}


@dataclass
class Conversation:
    seed: int
    shape: str
    messages: list[dict[str, Any]]
    probes: list[Probe]
    constraints: list[str]
    objective: str
    tokens: int = 0
    stats: dict[str, int] = field(default_factory=dict)

    def state(self) -> dict[str, Any]:
        """The `--state` JSON: the objective and the constraints (verbatim)."""
        return {"objective": self.objective, "constraints": list(self.constraints)}

    def jsonl(self) -> str:
        return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in self.messages)


def _speaker(r: random.Random, category: str) -> str:
    return r.choices(("user", "assistant", "tool"), SPEAKERS[category])[0]


def _positions(r: random.Random, n: int, low: float = 0.0) -> list[float]:
    """n positions spread over [low, 1): one per stratum, shuffled (early, middle and late)."""
    ps = [low + (1 - low) * (i + r.random()) / n for i in range(n)]
    r.shuffle(ps)
    return ps


def render(turns: list[Turn], seed: int) -> list[dict[str, Any]]:
    """The turns as Anthropic messages. Deterministic: its own rng, so re-rendering is stable."""
    r = random.Random(f"render:{seed}")
    out: list[dict[str, Any]] = []
    k = 0
    for t in turns:
        out.append({"role": "user", "content": [{"type": "text", "text": "\n".join(t.user or [noise.ack(r)])}]})
        calls = list(t.calls)
        first = True
        while calls:
            n = r.randint(1, 3)
            chunk, calls = calls[:n], calls[n:]
            content: list[dict[str, Any]] = []
            if first and t.pre:
                content.append({"type": "text", "text": "\n".join(t.pre)})
            first = False
            results: list[dict[str, Any]] = []
            for c in chunk:
                k += 1
                tid = f"toolu_{seed % 10_000:04d}{k:05d}"
                content.append({"type": "tool_use", "id": tid, "name": c.name, "input": c.input})
                res: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": "\n".join(c.lines)}
                if c.is_error:
                    res["is_error"] = True
                results.append(res)
            out.append({"role": "assistant", "content": content})
            out.append({"role": "user", "content": results})
        text = t.post if t.calls else t.pre + t.post
        out.append({"role": "assistant", "content": [{"type": "text", "text": "\n".join(text or [noise.ack(r, "assistant")])}]})
    return out


def measure(messages: list[dict[str, Any]]) -> int:
    """Tokens as `longrun compact --budget` counts them."""
    return estimate_messages([Message.from_wire(m) for m in messages])


def _names(n: w.Namer, r: random.Random) -> dict[str, str]:
    return {"db": n.db(), "branch": n.branch(), "svc": n.service(), "flag": n.flag(), "region": r.choice(w.REGIONS),
            "path": f"{r.choice(('infra', 'deploy', 'migrations'))}/{r.choice(w.NOUN)}/"}


def conversation(seed: int, shape: str = "sparse") -> Conversation:
    """The conversation for (seed, shape), with 75 probes (15 per category)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; choose from {', '.join(SHAPES)}")
    r = random.Random(f"retention:{shape}:{seed}")
    namer = w.Namer(r)
    dense = shape == "dense"
    decisions = shape == "decisions"  # sparse, its corrections overridden decisions and rejected plans
    turns = [Turn() for _ in range(r.randint(30, 45) if dense else r.randint(140, 200))]
    facts = Facts(r, namer, turns, join=0.9 if dense else 0.4)
    background = [namer.service() for _ in range(12)]

    # probes: 15 per category, spread over the conversation, speakers mixed
    for category in CATEGORIES:
        spots = _positions(r, PROBES_PER_CATEGORY - (RECORD_PROBES if category == "value" else 0),
                           0.12 if category == "correction" else 0.0)
        if category == "value":  # some values stated in lines of dozens of pairs
            for lo in range(RECORD_PROBES // 2):
                facts.records(r.uniform(lo / (RECORD_PROBES // 2), (lo + 1) / (RECORD_PROBES // 2)), 2)
        for pos in spots:
            if category == "value":
                facts.value(pos, True)
            elif category == "tool":
                facts.tool(pos, True)
            elif category == "correction" and decisions:
                facts.decision(max(pos, 0.2), True, _speaker(r, category))
            else:
                getattr(facts, category)(pos, True, _speaker(r, category))

    # constraints: said by the user early or mid-way, and passed in the state
    names = _names(namer, r)
    templates = r.sample(ph.CONSTRAINT_TEMPLATES, r.randint(2, 4))
    constraints = [t(names) for t in templates]
    for c in constraints:
        facts.turn(r.uniform(0.0, 0.6)).user.append(c)
    objective = (f"Finish the {r.choice(w.NOUN)} platform migration for the {r.choice(w.ADJ)} team: keep the "
                 "services healthy, the tracker current and the runbook accurate.")

    stats = {"distractors": 0, "filler_units": 0}
    # unprobed look-alikes (the dense shape adds many more below, in groups)
    for _ in range(0 if dense else r.randint(45, 70)):
        category = r.choices(CATEGORIES, (30, 20, 15, 10, 25))[0]
        pos = r.random()
        if category == "value":
            facts.value(pos, False, r.choice(("user", "user", "user", "assistant")))
        elif category == "tool":
            facts.tool(pos, False)
        elif category == "correction" and decisions and r.random() < 0.5:
            facts.decision(max(0.2, pos), False, _speaker(r, category))
        else:
            getattr(facts, category)(max(0.12, pos) if category == "correction" else pos, False, _speaker(r, category))
        stats["distractors"] += 1

    # lines flagged unrelated or obsolete: about probed subjects (wrong values) and look-alikes
    probed = [p.subject for p in facts.probes if p.category in ("value", "correction", "relation")]
    for _ in range(r.randint(12, 20) if dense else r.randint(8, 12)):
        facts.unrelated(r.random(), r.choice(probed) if r.random() < 0.5 else None)

    # base chatter and some long tool output
    who = f"{r.choice(w.FIRST).title()} {r.choice(w.LAST).title()}"
    for t in turns:
        if r.random() < (0.25 if dense else 0.55):
            t.user.insert(r.randint(0, len(t.user)), noise.ack(r))
        if r.random() < (0.2 if dense else 0.5):
            t.post.append(noise.ack(r, "assistant"))
        if not dense:
            if r.random() < 0.25:
                t.pre.insert(0, noise.narration(r, background))
            if r.random() < 0.35:
                (t.post if r.random() < 0.7 else t.user).append(noise.prose(r))
            if r.random() < 0.12:
                t.user.append(noise.signature(r, who))
            if r.random() < 0.06:
                t.user.append(noise.digest(r))
    for _ in range(r.randint(1, 2) if dense else r.randint(4, 7)):
        call = noise.long_call(r, background, r.randint(15, 30) if dense else r.randint(30, 90))
        turns[r.randrange(len(turns))].calls.append(call)

    target = r.randint(*TARGET_RANGE[shape])
    tokens = measure(render(turns, seed))
    while tokens < target:
        deficit = target - tokens
        added = 0
        while added < max(200, deficit // 2):
            added += _dense_unit(r, facts, stats) if dense else _sparse_unit(r, turns, background, who, stats)
        tokens = measure(render(turns, seed))
    messages = render(turns, seed)
    assert MIN_TOKENS <= tokens <= MAX_TOKENS, f"{shape}/{seed}: {tokens} tokens"
    assert len(facts.probes) == PROBES_PER_CATEGORY * len(CATEGORIES)
    return Conversation(seed, shape, messages, facts.probes, constraints, objective, tokens, stats)


def _sparse_unit(r: random.Random, turns: list[Turn], background: list[str], who: str, stats: dict[str, int]) -> int:
    """One piece of filler; returns its approximate tokens."""
    t = turns[r.randrange(len(turns))]
    kind = r.choices(("ack", "aack", "talk", "ci", "boiler", "sig", "digest", "narr", "prose", "long"),
                     (22, 14, 8, 7, 6, 6, 3, 6, 25, 3))[0]
    stats["filler_units"] += 1
    if kind == "long":
        call = noise.long_call(r, background, r.randint(30, 120))
        t.calls.insert(r.randint(0, len(t.calls)), call)
        return estimate_text("\n".join(call.lines)) + 50
    line = {"ack": lambda: noise.ack(r), "aack": lambda: noise.ack(r, "assistant"), "talk": lambda: noise.chatter(r),
            "ci": lambda: noise.ci_line(r), "boiler": lambda: noise.boilerplate(r),
            "narr": lambda: noise.narration(r, background), "prose": lambda: noise.prose(r),
            "sig": lambda: noise.signature(r, who), "digest": lambda: noise.digest(r)}[kind]()
    user = kind in ("ack", "talk", "ci", "boiler", "sig", "digest") or (kind == "prose" and r.random() < 0.3)
    (t.user if user else t.post).append(line)
    return estimate_text(line) + 1


def _dense_unit(r: random.Random, facts: Facts, stats: dict[str, int]) -> int:
    """A group of look-alike facts in one message (or one tool result); returns approximate tokens."""
    before = sum(len(x) for t in facts.turns for x in (*t.user, *t.pre, *t.post)) + _call_chars(facts.turns)
    pos = r.random()
    speaker = r.choices(("user", "assistant", "tool"), (5, 4, 1))[0]
    for _ in range(r.randint(6, 20)):
        category = r.choices(CATEGORIES, (36, 22, 2, 12, 28))[0]
        if category == "value":
            facts.value(pos, False, "assistant" if speaker == "assistant" else "user")
        elif category == "tool":
            facts.tool(pos, False)
        elif category == "correction":
            facts.correction(max(0.12, pos), False, speaker)
        else:
            getattr(facts, category)(pos, False, speaker)
        stats["distractors"] += 1
    if r.random() < 0.15:
        facts.turn(pos).user.append(noise.ack(r))
    after = sum(len(x) for t in facts.turns for x in (*t.user, *t.pre, *t.post)) + _call_chars(facts.turns)
    return max(1, (after - before) * 10 // 32)


def _call_chars(turns: list[Turn]) -> int:
    return sum(len(line) + 1 for t in turns for c in t.calls for line in c.lines) + 90 * sum(len(t.calls) for t in turns)


__all__ = ["MAX_TOKENS", "MIN_TOKENS", "PROBES_PER_CATEGORY", "SHAPES", "Conversation", "conversation", "measure"]

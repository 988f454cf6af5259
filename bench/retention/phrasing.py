"""How facts are said: the phrasing templates of the five probed categories.

Why so many: a benchmark with one sentence shape per category rewards a compactor that matches
that shape. Each category here has at least six phrasings (prose, `key: value`, assignments,
markdown table rows, JSON lines, arrows, YAML, checkbox lists), chosen per fact by the seed, and
the same templates render the unprobed distractors. Every template keeps the subject and the
answer on one line, so a method that keeps the line verbatim keeps the fact.

A template is `(id, render)`; the id is recorded on each probe so the tests can count the
distinct phrasings a category really used.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from bench.retention import words as w


@dataclass(frozen=True)
class Attr:
    """An attribute of a service or parameter: its label, machine key, value maker, verb, question."""

    label: str
    key: str
    make: Callable[[random.Random], str]
    verb: str
    question: str


SERVICE_ATTRS = (
    Attr("port", "port", w.port, "listens on port", "Which port does {s} listen on?"),
    Attr("owner", "owner", w.email, "is owned by", "Who owns {s}?"),
    Attr("on-call handle", "oncall", w.handle, "pages", "Who is on call for {s}?"),
    Attr("version", "version", w.semver, "is pinned to version", "Which version is {s} pinned to?"),
    Attr("timeout", "timeout", w.duration, "times out after", "What is the timeout of {s}?"),
    Attr("config path", "config_path", w.path, "reads its config from", "Where does {s} read its config from?"),
    Attr("artifact sha256", "sha256", lambda r: w.hexstr(r, 64), "ships an artifact with sha256",
         "What is the sha256 of the {s} artifact?"),
    Attr("schema md5", "schema_md5", lambda r: w.hexstr(r, 32), "has the schema checksum (md5)",
         "What is the schema md5 of {s}?"),
    Attr("canary share", "canary", w.percent, "takes a canary share of", "What canary share does {s} take?"),
    Attr("launch date", "launch_date", w.date, "goes live on", "When does {s} go live?"),
    Attr("endpoint", "endpoint", w.url, "is reachable at", "At which URL is {s} reachable?"),
    Attr("error budget", "error_budget", w.percent, "has an error budget of", "What is the error budget of {s}?"),
    Attr("flag", "flag", lambda r: f"ff_{r.choice(w.NOUN)}_{r.choice(w.ADJ)}_{w.word_id(r, 3)}",
         "is gated by the feature flag", "Which feature flag gates {s}?"),
    Attr("retry backoff", "backoff", w.duration, "backs off for", "What is the retry backoff of {s}?"),
    Attr("ip", "ip", w.ipv4, "has the address", "What is the address of {s}?"),
)
PARAM_ATTR = Attr("value", "value", w.number, "is set to", "What value is {s} set to?")

Render = Callable[[str, Attr, str], str]

VALUE_TEMPLATES: tuple[tuple[str, Render], ...] = (
    ("val.prose", lambda s, a, v: f"{s} {a.verb} {v}."),
    ("val.colon", lambda s, a, v: f"{s} {a.label}: {v}"),
    ("val.assign", lambda s, a, v: f"Set {s}.{a.key}={v}"),
    ("val.table", lambda s, a, v: f"| {s} | {a.label} | {v} |"),
    ("val.json", lambda s, a, v: f'{{"name": "{s}", "{a.key}": "{v}"}}'),
    ("val.arrow", lambda s, a, v: f"{s} => {v} ({a.label})"),
    ("val.yaml", lambda s, a, v: f"{s}: {{{a.key}: {v}}}"),
    ("val.use", lambda s, a, v: f"For {s}, use {v} as the {a.label}."),
    ("val.eq", lambda s, a, v: f"{a.label} for {s} = {v}"),
    ("val.helm", lambda s, a, v: f"helm upgrade ... --set {s}.{a.key}={v}"),
)
PROVISIONAL_TEMPLATES: tuple[tuple[str, Render], ...] = (
    ("prov.colon", lambda s, a, v: f"{s} {a.label}: {v} (provisional)"),
    ("prov.tentative", lambda s, a, v: f"Tentatively, {s} {a.verb} {v}."),
    ("prov.fornow", lambda s, a, v: f"for now {s} {a.key}={v}, may change"),
    ("prov.plain", lambda s, a, v: f"{s} {a.verb} {v}."),
    ("prov.table", lambda s, a, v: f"| {s} | {a.label} | {v} |"),
)

CorrRender = Callable[[str, Attr, str, str], str]
CORRECTION_TEMPLATES: tuple[tuple[str, CorrRender], ...] = (
    ("corr.correction", lambda s, a, o, n: f"Correction: {s} {a.label} is {n}, not {o}."),
    ("corr.makethat", lambda s, a, o, n: f"actually make that {n} for the {s} {a.label}"),
    ("corr.scratch", lambda s, a, o, n: f"scratch that, {s} {a.label} is {n}"),
    ("corr.update", lambda s, a, o, n: f"update — {s} {a.label} changed from {o} to {n}"),
    ("corr.earlier", lambda s, a, o, n: f"earlier I said {o} for {s} {a.label}; it's {n}"),
    ("corr.nowwas", lambda s, a, o, n: f"{s} {a.label} is now {n} (was {o})"),
    ("corr.json", lambda s, a, o, n: f'{{"name": "{s}", "{a.key}": "{n}", "previous": "{o}"}}'),
    ("corr.restate", lambda s, a, o, n: f"{s} {a.label}: {n}"),
    ("corr.arrow", lambda s, a, o, n: f"{s} {a.key}: {o} -> {n} (final)"),
)

# Corrections of other structures than an attribute said again (issue 25, "supersession across
# rewording"): a relation re-pointed, a name changed, a value corrected inside a long line of pairs.
REPOINT_VERBS = {"routes_to": "routes to", "reads_from": "reads from", "publishes_to": "publishes to",
                 "deployed_to": "is scheduled on"}
"""Single-valued relations (a service routes to one place at a time; `depends_on` may have many)."""
RepointRender = Callable[[str, str, str, str], str]
REPOINT_TEMPLATES: tuple[tuple[str, RepointRender], ...] = (
    ("rp.now", lambda a, verb, b, c: f"{a} now {verb} {c}"),
    ("rp.fromto", lambda a, verb, b, c: f"re-pointed {a} from {b} to {c}"),
    ("rp.table", lambda a, verb, b, c: f"| {a} | {verb} | {c} |"),
    ("rp.instead", lambda a, verb, b, c: f"{a} {verb} {c} instead of {b}"),
    ("rp.cutover", lambda a, verb, b, c: f"cutover done: {a} {verb} {c} from now on"),
)
RENAME_OLD: tuple[Callable[[str, str], str], ...] = (
    lambda s, v: f"The codename for {s} is {v}.",
    lambda s, v: f"{s} codename: {v}",
    lambda s, v: f"| {s} | codename | {v} |",
)
RENAME_TEMPLATES: tuple[tuple[str, Callable[[str, str, str], str]], ...] = (
    ("rn.calling", lambda s, o, n: f"We are calling {s} {n} now."),
    ("rn.changed", lambda s, o, n: f"the {s} codename changed to {n}"),
    ("rn.known", lambda s, o, n: f"From here on {s} is known as {n}."),
    ("rn.colon", lambda s, o, n: f"new codename for {s}: {n}"),
)
RECORD_HEADERS = ("Records update:", "CURRENT PARAMETERS (revised)", "Config dump after the fix, all current:")
"""Headers of the later line of pairs that restates some pairs with new values."""

RELATIONS: dict[str, tuple[str, tuple[tuple[str, Callable[[str, str], str]], ...]]] = {
    "depends_on": ("What does {s} depend on?", (
        ("rel.dep.prose", lambda a, b: f"{a} depends on {b}"),
        ("rel.dep.inverse", lambda a, b: f"{b} is a dependency of {a}"),
        ("rel.dep.arrow", lambda a, b: f"{a} -> {b} (runtime dependency)"),
        ("rel.dep.list", lambda a, b: f"deps for {a}: {b}"),
        ("rel.dep.needs", lambda a, b: f"`{a}` needs `{b}` up before it starts"),
        ("rel.dep.yaml", lambda a, b: f"{a}: {{depends_on: [{b}]}}"),
    )),
    "routes_to": ("Where is traffic for {s} routed?", (
        ("rel.route.prose", lambda a, b: f"traffic for {a} is routed to {b}"),
        ("rel.route.verb", lambda a, b: f"{a} routes to {b}"),
        ("rel.route.arrow", lambda a, b: f"route {a} => {b}"),
        ("rel.route.table", lambda a, b: f"| {a} | routes to | {b} |"),
        ("rel.route.lb", lambda a, b: f"the LB sends {a} requests to {b}"),
        ("rel.route.json", lambda a, b: f'{{"route": "{a}", "upstream": "{b}"}}'),
    )),
    "runs_in": ("In which region does {s} run?", (
        ("rel.region.prose", lambda a, b: f"the {a} runs in {b}"),
        ("rel.region.colon", lambda a, b: f"{a} region: {b}"),
        ("rel.region.deployed", lambda a, b: f"{a} is deployed in {b}"),
        ("rel.region.hosts", lambda a, b: f"{b} hosts {a}"),
        ("rel.region.json", lambda a, b: f'{{"job": "{a}", "region": "{b}"}}'),
        ("rel.region.at", lambda a, b: f"{a} @ {b}"),
    )),
    "reads_from": ("Which database does {s} read from?", (
        ("rel.db.prose", lambda a, b: f"{a} reads from {b}"),
        ("rel.db.primary", lambda a, b: f"{a} uses {b} as its primary store"),
        ("rel.db.backs", lambda a, b: f"{b} backs {a}"),
        ("rel.db.assign", lambda a, b: f"{a}.datasource = {b}"),
    )),
    "publishes_to": ("Where does {s} publish its events?", (
        ("rel.pub.prose", lambda a, b: f"{a} publishes to {b}"),
        ("rel.pub.events", lambda a, b: f"events from {a} go to {b}"),
        ("rel.pub.arrow", lambda a, b: f"{b} <- {a}"),
        ("rel.pub.emits", lambda a, b: f"{a} emits to topic {b}"),
    )),
    "deployed_to": ("Which cluster is {s} scheduled on?", (
        ("rel.cluster.prose", lambda a, b: f"{a} lives on cluster {b}"),
        ("rel.cluster.sched", lambda a, b: f"{a} is scheduled on {b}"),
        ("rel.cluster.colon", lambda a, b: f"cluster for {a}: {b}"),
        ("rel.cluster.table", lambda a, b: f"| {a} | cluster | {b} |"),
    )),
}

STATUS_QUESTIONS = {"state": "What is the status of {s}?", "blocked": "What is {s} blocked on?",
                    "next": "What is the next action for {s}?"}
StatusRender = Callable[[str, str, random.Random], str]
STATUS_TEMPLATES: dict[str, tuple[tuple[str, StatusRender], ...]] = {
    "state": (
        ("st.bare", lambda i, v, r: f"{i} {v}"),
        ("st.statusof", lambda i, v, r: f"status of {i}: {v}"),
        ("st.checkbox", lambda i, v, r: f"- [{'x' if v in ('done', 'merged') else ' '}] {i} {w.title(r)} — {v}"),
        ("st.table", lambda i, v, r: f"| {i} | {w.title(r)} | {v} |"),
        ("st.asof", lambda i, v, r: f"{i}: {v} as of {w.date(r)}"),
        ("st.arrow", lambda i, v, r: f"{i} → {v}"),
        ("st.json", lambda i, v, r: f'{{"key": "{i}", "status": "{v}", "assignee": "{w.handle(r)}"}}'),
    ),
    "blocked": (
        ("st.blockedon", lambda i, v, r: f"status of {i}: blocked on {v}"),
        ("st.waits", lambda i, v, r: f"Blocked: {i} waits for {v}"),
        ("st.checkblocked", lambda i, v, r: f"- [ ] {i} {w.title(r)} — blocked on {v}"),
        ("st.stuck", lambda i, v, r: f"{i} is stuck until we get {v}"),
    ),
    "next": (
        ("st.next", lambda i, v, r: f"Next action for {i}: {v}"),
        ("st.nextarrow", lambda i, v, r: f"{i} → next: {v}"),
        ("st.todo", lambda i, v, r: f"TODO({i}): {v}"),
        ("st.thenwe", lambda i, v, r: f"for {i} the next step is to {v}"),
    ),
}
PROGRESS_LINE = "{i} in progress"  # an earlier status a later line supersedes (done/merged)

UNRELATED_TEMPLATES: tuple[Callable[[str, str, str], str], ...] = (
    lambda s, lab, v: f"(unrelated) {s} {lab} on the old cluster was {v}",
    lambda s, lab, v: f"ignore the old staging note: {s} {lab} {v}",
    lambda s, lab, v: f"obsolete, do not use: {s} {lab}={v}",
    lambda s, lab, v: f"FYI, not for this project: {s} {lab} {v} (other team's fork)",
    lambda s, lab, v: f"the 2021 runbook says {s} {lab} {v}; that runbook is outdated",
)

CONSTRAINT_TEMPLATES: tuple[Callable[[dict[str, str]], str], ...] = (
    lambda n: f"Never run migrations against {n['db']} without a ticket.",
    lambda n: f"Do not push to {n['branch']} directly; open a PR.",
    lambda n: f"Keep {n['svc']} behind {n['flag']} until QA signs off.",
    lambda n: f"Only deploy to {n['region']} during the Tuesday change window.",
    lambda n: f"Do not modify anything under {n['path']}.",
    lambda n: f"Never restart {n['svc']} during business hours in {n['region']}.",
)

# Overridden decisions and rejected plans (issue 25: "when a plan was rejected and replaced, the
# rejected plan is still presented"): a plan or decision about a service, then a later line that
# replaces it, in structures that differ, not only in words.
DECISION_TOPICS: dict[str, tuple[str, tuple[str, ...]]] = {
    # topic: (its JSON key, the options; no option is a token inside another)
    "cache": ("cache", ("memcached", "Redis", "Hazelcast", "Caffeine", "Varnish")),
    "queue": ("queue", ("Kafka", "RabbitMQ", "SQS", "NATS", "Pulsar")),
    "rollout strategy": ("rollout", ("blue-green", "canary", "rolling", "shadow-traffic")),
    "export format": ("export_format", ("Parquet", "CSV", "Avro", "NDJSON", "ORC")),
    "datastore": ("datastore", ("Postgres", "DynamoDB", "Cassandra", "CockroachDB", "MySQL")),
    "API style": ("api_style", ("gRPC", "REST", "GraphQL", "Thrift")),
    "auth scheme": ("auth", ("OIDC", "mTLS", "SAML", "JWT")),
    "search backend": ("search", ("Elasticsearch", "OpenSearch", "Typesense", "Meilisearch")),
    "job runner": ("runner", ("Airflow", "Temporal", "Argo", "Dagster")),
}
DECISION_TEMPLATES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    # (id, the lines, each (when: "old", "mid" or "new"; text with {s} service, {t} topic, {k} its key,
    # {a} the old option, {b} the new one, {n} and {m} = n + 1 numbers)); the answer is {b}
    ("dec.plan_no", (("old", "Plan for {s}: use {a} as the {t}."), ("new", "No, we are not doing {a} for {s}; do {b}."))),
    ("dec.revert", (("old", "Decision: {s} {t} = {a}."), ("new", "Reverting the {a} decision on {s}, going with {b}."))),
    ("dec.options", (("old", "Options for the {s} {t}: {a}, {b} or something else; leaning to {a}."),
                     ("mid", "We picked {a} for {s}."), ("new", "{s}: {a} is out, {b} replaces it."))),
    ("dec.adr", (("old", '{{"adr": "ADR-{n}", "service": "{s}", "{k}": "{a}", "status": "accepted"}}'),
                 ("new", '{{"adr": "ADR-{m}", "service": "{s}", "{k}": "{b}", "supersedes": "ADR-{n}"}}'))),
    ("dec.agreed", (("old", "Let's go with {a} for the {s} {t}."), ("mid", "Agreed, {s} gets {a}."),
                    ("new", "Change of plan for {s}: drop {a}, use {b}."))),
    ("dec.tried", (("old", "Going with {a} for the {s} {t} for now."),
                   ("new", "We tried {a} on {s} and it did not hold up; {b} it is."))),
    ("dec.table", (("old", "| {s} | {t} | {a} | chosen |"), ("mid", "| {s} | {t} | {a} | rejected |"),
                   ("new", "| {s} | {t} | {b} | chosen |"))),
)

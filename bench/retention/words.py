"""Word lists and value makers for the retention benchmark's generator.

Why word lists and not fixed names: a compaction method must not win by recognising one
project's vocabulary. Every conversation draws its services, parameters, tasks, hosts and values
from these lists with its own seed, so names and values differ per seed, and the same list feeds
probed facts and the unprobed look-alikes (distractors) so the two cannot be told apart by name.

`Namer` hands out names that are never a substring of one another (nor of any value): the scorer
matches a subject and an answer on one line, and `amber-ledger` inside `amber-ledger-canary`
would let the wrong line count.
"""

from __future__ import annotations

import random
import string

ADJ = (
    "amber", "arctic", "azure", "basalt", "birch", "bronze", "cedar", "cinder", "cobalt", "copper", "coral", "crimson",
    "delta", "dusky", "ember", "fable", "fern", "flint", "frost", "garnet", "ginger", "glacier", "granite", "harbor",
    "hazel", "indigo", "ivory", "jade", "juniper", "kestrel", "lapis", "larch", "lunar", "maple", "marble", "meadow",
    "misty", "nimbus", "north", "obsidian", "ochre", "onyx", "opal", "orchid", "pebble", "pine", "plume", "polar",
    "quartz", "raven", "russet", "saffron", "sable", "sienna", "silver", "slate", "solar", "spruce", "stone", "swift",
    "tawny", "teal", "thistle", "topaz", "tundra", "umber", "velvet", "vivid", "willow", "winter", "zephyr", "zinc",
)
NOUN = (
    "ledger", "billing", "invoice", "payments", "checkout", "catalog", "search", "ingest", "notify", "mailer", "auth",
    "session", "profile", "orders", "cart", "pricing", "quota", "audit", "reports", "export", "import", "scheduler",
    "router", "gateway", "indexer", "crawler", "media", "thumbs", "uploads", "webhooks", "ratelimit", "tenant",
    "metrics", "alerts", "tracing", "feeds", "inbox", "ledgerx", "refunds", "tax", "shipping", "stock", "coupons",
    "loyalty", "ranker", "recs", "geo", "maps", "chat", "presence", "signup", "billingx", "vault", "keys", "backup",
    "archive", "sync", "relay", "broker", "fanout", "digest", "summary", "planner", "compiler", "builder", "deployer",
)
SUFFIX = ("svc", "api", "worker", "gw", "daemon", "job", "proxy", "core", "edge", "hub")
GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu",
         "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega")
PARAM_STYLE = ("PARAM_{g}_{n}", "KNOB_{G}_{n}", "{G}_{N}_LIMIT", "cfg.{g}.{w}{n}", "tune_{w}_{g}{n}", "{W}_{G}_{n}")
TASK_PREFIX = ("T", "OPS", "INFRA", "PLAT", "SEC", "DATA", "REL", "BE", "FE", "QA", "MIG", "CORE")
TASK_WORD = ("migration", "backfill", "rollout", "cutover", "incident", "spike", "rfc", "chore", "hotfix", "epic")
REGIONS = ("eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-north-1", "us-east-1", "us-east-2", "us-west-1",
           "us-west-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "ca-central-1",
           "sa-east-1", "me-central-1", "af-south-1", "europe-west4", "us-central1", "asia-east1")
FIRST = ("dana", "li", "omar", "priya", "jonas", "mei", "tomas", "aisha", "kenji", "sofia", "ravi", "nina", "lucas",
         "yara", "felix", "ines", "marco", "hana", "piotr", "zoe", "ada", "bruno", "chloe", "diego", "elif", "femi")
LAST = ("okafor", "nguyen", "schmidt", "rossi", "kowalski", "tanaka", "silva", "haddad", "larsen", "moreau",
        "petrov", "garcia", "kim", "novak", "ibrahim", "weber", "costa", "mehta", "sato", "ferreira", "lund")
DOMAINS = ("acme.io", "example.com", "corp.internal", "northwind.dev", "initech.net", "globex.org")
EXT = ("yaml", "toml", "json", "conf", "ini", "env", "py", "sql", "tf", "lock")
ROOTS = ("etc", "srv", "opt", "var/lib", "deploy", "infra", "config", "ops", "services", "charts")
UNITS = ("ms", "s", "m", "h")
STATUS_WORDS = ("done", "in progress", "in review", "blocked", "paused", "merged", "wontfix", "queued", "on hold")
HEALTH = ("degraded", "healthy", "unhealthy", "draining", "starting", "flapping", "overloaded", "recovering")
VERBS = ("rotate", "rerun", "rebuild", "re-index", "drain", "backfill", "reshard", "vacuum", "re-sign", "bump",
         "revert", "snapshot", "promote", "re-key", "purge", "warm")
OBJECTS = ("token", "cert", "cache", "replica", "queue", "index", "bucket", "schema", "keyring", "snapshot", "topic",
           "pool", "mirror", "manifest")
BLOCKERS = ("DB creds", "a vault token", "legal sign-off", "the VPN change", "a quota bump", "vendor access",
            "the DNS cutover", "security review", "a prod change window", "the schema freeze", "capacity approval",
            "an SSO group", "the billing export", "a firewall rule")


class Namer:
    """Unique, non-overlapping names for one conversation."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: list[str] = []

    def _free(self, name: str) -> bool:
        low = name.lower()
        return all(low not in u and u not in low for u in self.used)

    def take(self, make: object) -> str:
        for _ in range(500):
            name = make() if callable(make) else str(make)
            if self._free(name):
                self.used.append(name.lower())
                return name
        raise RuntimeError("name space exhausted")

    def reserve(self, value: str) -> str:
        """Record a value so no later name contains it (or is contained in it)."""
        self.used.append(value.lower())
        return value

    # -- subjects ------------------------------------------------------------------------------
    def service(self) -> str:
        r = self.rng
        return self.take(lambda: f"{r.choice(ADJ)}-{r.choice(NOUN)}" + (f"-{r.choice(SUFFIX)}" if r.random() < 0.5 else ""))

    def param(self) -> str:
        r = self.rng

        def make() -> str:
            g, w = r.choice(GREEK), r.choice(NOUN)
            return r.choice(PARAM_STYLE).format(g=g, G=g.upper(), w=w, W=w.upper(), n=r.randint(1, 99),
                                                N=r.choice(("MAX", "MIN", "SOFT", "HARD")))
        return self.take(make)

    def task(self) -> str:
        r = self.rng
        return self.take(lambda: f"{r.choice(TASK_PREFIX)}-{r.randint(10, 9999)}" if r.random() < 0.7
                         else f"{r.choice(TASK_WORD)}-{r.randint(2, 99)}")

    def host(self) -> str:
        r = self.rng
        return self.take(lambda: f"{r.choice(NOUN)}-{r.randint(1, 40)}.{r.choice(('prod', 'stg', 'dev', 'qa'))}."
                         f"{r.choice(('internal', 'corp', 'lan', 'cluster.local'))}")

    def db(self) -> str:
        r = self.rng
        return self.take(lambda: f"{r.choice(NOUN)}-{r.choice(('db', 'pg', 'mysql', 'redis', 'kv'))}-{r.randint(1, 30)}")

    def queue(self) -> str:
        r = self.rng
        return self.take(lambda: f"{r.choice(NOUN)}.{r.choice(NOUN)}.{r.choice(('events', 'jobs', 'dlq', 'v2'))}")

    def cluster(self) -> str:
        r = self.rng
        return self.take(lambda: f"k8s-{r.choice(ADJ)}-{r.randint(1, 20)}")

    def flag(self) -> str:
        r = self.rng
        return self.take(lambda: f"ff_{r.choice(NOUN)}_{r.choice(ADJ)}_v{r.randint(1, 9)}")

    def const(self) -> str:
        r = self.rng
        return self.take(lambda: f"{r.choice(NOUN).upper()}_{r.choice(('MAX', 'MIN', 'DEFAULT', 'RETRY', 'BATCH'))}_"
                         f"{r.choice(('CONN', 'SIZE', 'WAIT', 'ITEMS', 'BYTES', 'RPS'))}")

    def artifact(self) -> str:
        r = self.rng
        return self.take(lambda: f"dist/{r.choice(ADJ)}-{r.choice(NOUN)}-{r.randint(0, 9)}.{r.randint(0, 30)}."
                         f"{r.randint(0, 9)}.{r.choice(('tar.gz', 'whl', 'zip', 'deb'))}")

    def mount(self) -> str:
        r = self.rng
        return self.take(lambda: f"/var/lib/{r.choice(NOUN)}{r.randint(1, 9)}")

    def branch(self) -> str:
        r = self.rng
        return self.take(lambda: f"{r.choice(('feat', 'fix', 'chore', 'release'))}/{r.choice(ADJ)}-{r.choice(NOUN)}")


# -- values ------------------------------------------------------------------------------------
def hexstr(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def port(rng: random.Random) -> str:
    return str(rng.randint(1025, 64999))


def path(rng: random.Random) -> str:
    return f"/{rng.choice(ROOTS)}/{rng.choice(NOUN)}/{rng.choice(NOUN)}-{rng.randint(1, 99)}.{rng.choice(EXT)}"


def semver(rng: random.Random) -> str:
    return f"{rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 30)}"


def duration(rng: random.Random) -> str:
    u = rng.choice(UNITS)
    return f"{rng.randint(50, 950) if u == 'ms' else rng.randint(2, 95)}{u}"


def email(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)}.{rng.choice(LAST)}{rng.randint(1, 99)}@{rng.choice(DOMAINS)}"


def handle(rng: random.Random) -> str:
    return f"@{rng.choice(FIRST)}-{rng.choice(LAST)}{rng.randint(1, 99)}"


def percent(rng: random.Random) -> str:
    return f"{rng.randint(1, 99)}.{rng.randint(1, 9)}%" if rng.random() < 0.6 else f"{rng.randint(1, 99)}%"


def date(rng: random.Random) -> str:
    return f"20{rng.randint(24, 27)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def url(rng: random.Random) -> str:
    return (f"https://{rng.choice(NOUN)}{rng.randint(1, 99)}.{rng.choice(DOMAINS)}/"
            f"{rng.choice(('v1', 'v2', 'api', 'hooks', 'rpc'))}/{rng.choice(NOUN)}")


def ipv4(rng: random.Random) -> str:
    return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def number(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.35:
        return f"0.{rng.randint(1, 9)}{rng.randint(0, 999):03d}"
    if kind < 0.7:
        return str(rng.choice((128, 256, 384, 512, 768, 1024, 1536, 2048, 4096, 8192)) + rng.randint(1, 99))
    return str(rng.randint(11, 99999))


def action(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)} the {rng.choice(NOUN)} {rng.choice(OBJECTS)}"


def title(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)} {rng.choice(NOUN)} {rng.choice(OBJECTS)}s"


def word_id(rng: random.Random, n: int = 6) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))

"""longrun's redaction against `detect-secrets` on one corpus: caught, missed, false positives.

    python -m bench.redaction_eval          # the table and every miss and false positive
    python -m bench.run --only redaction_eval

The corpus: one line (or block) per secret, in the formats the security review listed (issue 15,
finding 5) and the ones longrun already redacts, plus a few kinds only detect-secrets knows; and
bait, text that looks random but is not a secret (git SHAs, UUIDs, a base64 image, hex digests,
lockfile integrity hashes, code that names passwords). A secret counts as caught when the secret
value is gone from longrun's output / when detect-secrets reports a finding overlapping it; a bait
line is a false positive when longrun changes it / when detect-secrets reports anything on it.

detect-secrets runs under its default settings (every plugin, the entropy checks at their default
limits, its heuristic filters) in two ways: `scan_file` on the case written to a file (what
`detect-secrets scan` does) and `scan_line` (`scan --string`, eager). It is in the `bench` extra
only (`pip install -e '.[bench]'`); without it only longrun is measured.
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import re
import string
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from bench.report import Section, Table, progress
from longrun.redact import Redactor


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    secret: str | None  # None: bait, nothing in it is a secret


def _rnd(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def corpus(seed: int = 15) -> list[Case]:
    """The cases; secret values are made here, so this file holds no secret-shaped literal."""
    r = random.Random(seed)
    hexd, b64 = "0123456789abcdef", string.ascii_letters + string.digits + "+/"
    up = string.ascii_uppercase + string.digits
    pem_body = "\n".join(_rnd(r, 64, b64) for _ in range(4))
    s: list[tuple[str, str, str]] = []  # (name, text with {s} for the secret, secret)

    def add(name: str, template: str, secret: str) -> None:
        s.append((name, template, secret))

    add("anthropic key", "ANTHROPIC_API_KEY={s}", "sk-ant-api03-" + _rnd(r, 48))
    add("openai key", "client = OpenAI(api_key=\"{s}\")", "sk-proj-" + _rnd(r, 40) + "7")
    add("aws access key id", "aws_access_key_id = {s}", "AKIA" + _rnd(r, 16, up))
    add("aws secret key", "aws_secret_access_key = {s}", _rnd(r, 40, string.ascii_letters + string.digits + "/+"))
    add("github token", "git clone https://{s}@github.com/o/r", "ghp_" + _rnd(r, 36))
    add("github fine-grained", "GH_TOKEN {s}", "github_pat_" + _rnd(r, 22) + "_" + _rnd(r, 59))
    add("slack bot token", "SLACK_BOT_TOKEN={s}", "xoxb-" + _rnd(r, 12, string.digits) + "-" + _rnd(r, 24))
    add("slack app token (xapp-)", "app token: {s}", "xapp-1-A" + _rnd(r, 10, up) + "-" + _rnd(r, 13, string.digits) + "-" + _rnd(r, 64, hexd))
    add("slack webhook", "curl -X POST {s}", "https://hooks.slack.com/services/T" + _rnd(r, 8, up) + "/B" + _rnd(r, 8, up) + "/" + _rnd(r, 24))
    add("jwt", "Cookie: session={s}", "eyJ" + _rnd(r, 30) + ".eyJ" + _rnd(r, 40) + "." + _rnd(r, 43))
    add("bearer header", "Authorization: Bearer {s}", _rnd(r, 40))
    add("basic auth header", "Authorization: Basic {s}", base64.b64encode(("deploy:" + _rnd(r, 14)).encode()).decode())
    add("rsa private key", "-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----", pem_body)
    add("openssh private key", "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----", pem_body[::-1])
    add("pgp private key block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{s}\n=Xy12\n"
        "-----END PGP PRIVATE KEY BLOCK-----", _rnd(r, 64, b64) + "\n" + _rnd(r, 64, b64))
    add("url password", "DATABASE_URL=postgres://app:{s}@db.internal:5432/prod", _rnd(r, 20))
    add("url password with /", "postgres://app:{s}@db.internal/prod", _rnd(r, 6) + "/" + _rnd(r, 8))
    add("url password with #", "redis://default:{s}@cache:6379/0", _rnd(r, 6) + "#" + _rnd(r, 8))
    add("url password with @", "mysql://root:{s}@localhost/app", _rnd(r, 5) + "@" + _rnd(r, 9))
    add("PGPASSWORD=", "PGPASSWORD={s} psql -h db -U app", "".join(r.choice(string.ascii_lowercase) for _ in range(14)))
    add(".pgpass line", "db.internal:5432:prod:app:{s}", _rnd(r, 18))
    add("password=word (unquoted)", "password={s}", "".join(r.choice(string.ascii_lowercase) for _ in range(12)))
    add("password in yaml", "  password: \"{s}\"", _rnd(r, 16))
    add("api_key assignment", "API_KEY={s}", _rnd(r, 32, hexd))
    add("stripe live key", "stripe.api_key = \"{s}\"", "sk_live_" + _rnd(r, 24))
    add("stripe restricted key", "STRIPE_KEY {s}", "rk_live_" + _rnd(r, 24))
    add("google api key", "maps: {s}", "AIza" + _rnd(r, 35, string.ascii_letters + string.digits + "-_"))
    add("gitlab token", "CI token {s}", "glpat-" + _rnd(r, 20))
    add("npm token", "//registry.npmjs.org/:_authToken={s}", "npm_" + _rnd(r, 36))
    add("hugging face token", "huggingface-cli login --token {s}", "hf_" + _rnd(r, 34, string.ascii_letters))
    # kinds detect-secrets has a plugin for
    add("sendgrid key", "SENDGRID={s}", "SG." + _rnd(r, 22) + "." + _rnd(r, 43))
    add("twilio api key", "twilio sid {s}", "SK" + _rnd(r, 32, hexd))
    add("azure storage key", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={s};EndpointSuffix=core.windows.net",
        _rnd(r, 86, b64) + "==")
    add("mailchimp key", "MAILCHIMP {s}", _rnd(r, 32, hexd) + "-us12")
    add("discord bot token", "DISCORD {s}", "M" + _rnd(r, 23) + "." + _rnd(r, 6) + "." + _rnd(r, 27))
    add("telegram bot token", "TELEGRAM {s}", _rnd(r, 10, string.digits) + ":AA" + _rnd(r, 33))
    # the gaps of issue 24, finding 5
    add(".netrc line", "machine api.example.com login deploy@example.com password {s}", _rnd(r, 20))
    add(".netrc, multi-line", "machine git.example.com\n  login deploy\n  password {s}\n", _rnd(r, 16))
    add("*_KEY= variable", "SENTRY_AUTH_KEY={s}", _rnd(r, 32, hexd))
    add("yaml password with &", "  password: {s}", _rnd(r, 6) + "&" + _rnd(r, 9))
    add("private key in a JSON string, cut", "{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{s}",
        "\\n".join(_rnd(r, 64, b64) for _ in range(3)))

    cases = [Case(name, template.replace("{s}", secret), secret) for name, template, secret in s]
    png = base64.b64encode(bytes(r.randrange(256) for _ in range(300))).decode()
    bait = [
        ("git sha (40 hex)", f"commit {hashlib.sha1(b'x').hexdigest()}"),
        ("short shas in a log", f"{hashlib.sha1(b'a').hexdigest()[:7]} fix moving average; {hashlib.sha1(b'b').hexdigest()[:7]} tests"),
        ("uuid", f"run_id = \"{uuid.UUID(int=r.getrandbits(128))}\""),
        ("sha256 hex digest", f"sha256 {hashlib.sha256(b'y').hexdigest()}  dist/app.tar.gz"),
        ("pip hash", f"requests==2.32.3 --hash=sha256:{hashlib.sha256(b'z').hexdigest()}"),
        ("docker image digest", f"image: python@sha256:{hashlib.sha256(b'w').hexdigest()}"),
        ("lockfile integrity", f"\"integrity\": \"sha512-{base64.b64encode(hashlib.sha512(b'v').digest()).decode()}\""),
        ("base64 png data uri", f"<img src=\"data:image/png;base64,{png}\">"),
        ("base64 in a test fixture", f"EXPECTED = \"{base64.b64encode(b'hello world, this is a fixture payload').decode()}\""),
        ("hex color table", "colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd']"),
        ("max_tokens", "request = {'model': m, 'max_tokens': 4096, 'temperature': 0.2}"),
        ("password in code", "password: str = request.form[\"password\"]"),
        ("password kwarg", "conn = connect(host=h, user=u, password=password)"),
        ("password from env", "password = os.environ[\"DB_PASSWORD\"]"),
        ("token attribute", "token = self.token or refresh(token_url)"),
        ("api key lookup", "api_key = settings.get('api_key')"),
        ("url with port and @ path", "https://registry.npmjs.org:443/@types/node"),
        ("ssh git url", "git@github.com:org/repo.git"),
        ("timestamp", "2026-12-01T14:05:33Z 12:30:45 worker started"),
        ("compiler output", "src/app.py:42:10: E501 line too long (99 > 88)"),
        ("prose", "Bearer tokens go in the Authorization header; a basic understanding helps"),
        ("random-looking identifier", "task-runner-skeleton-abcdefghijklmnopqrstu"),
        # bait for the rules of issue 24, finding 5
        ("*_KEY_NAME= setting", "API_KEY_NAME=header"),
        ("SECRET_KEY from the environment", "SECRET_KEY=os.environ[\"DJANGO_SECRET_KEY\"]"),
        ("yaml password placeholder", "password: ${DB_PASSWORD}"),
        ("a reference in Rust", "let password = &args[1];"),
        ("prose naming machine and password", "the machine learning course explains password hashing with bcrypt"),
        ("a URL query naming password", "GET /search?q=password&page=2&token_type=bearer"),
    ]
    cases += [Case(name, text, None) for name, text in bait]
    return cases


def leaks(secret: str, output: str) -> bool:
    """Whether any piece of `secret` (split at punctuation, 5 characters or more) is still in
    `output`: a password redacted only up to its first `@` still leaks the rest."""
    left = re.sub(r"\[REDACTED:[a-z_]+\]", "", output)
    return any(len(piece) >= 5 and piece in left for piece in re.split(r"[^A-Za-z0-9]+", secret))


def longrun_verdicts(cases: list[Case]) -> list[bool]:
    redactor = Redactor()
    out = [redactor.redact(c.text) for c in cases]
    return [not leaks(c.secret, o) if c.secret else (o != c.text) for c, o in zip(cases, out, strict=True)]


def _detect_secrets_findings(text: str, mode: str, workdir: str) -> list[str]:
    """The secret values detect-secrets reports in `text`: `scan` mode is `detect-secrets scan` on a
    file (its limits and filters), `adhoc` is `scan_line` (what `detect-secrets scan --string`
    does), one line at a time."""
    from detect_secrets.core.scan import scan_file, scan_line

    if mode == "adhoc":
        return [f.secret_value or "" for line in text.splitlines() for f in scan_line(line)]
    path = os.path.join(workdir, "sample.txt")
    with open(path, "w") as f:
        f.write(text + "\n")
    return [f.secret_value or "" for f in scan_file(path)]


def detect_secrets_verdicts(cases: list[Case], mode: str) -> list[bool]:
    from detect_secrets.settings import default_settings

    flags: list[bool] = []
    with tempfile.TemporaryDirectory() as workdir, default_settings():
        for c in cases:
            found = _detect_secrets_findings(c.text, mode, workdir)
            if c.secret is None:
                flags.append(bool(found))
            else:
                parts = [p for p in c.secret.splitlines() if p]
                block = "PRIVATE KEY" in c.text  # it reports a key block by its BEGIN line
                flags.append(any(v and (v in c.secret or any(p in v for p in parts) or (block and "PRIVATE KEY" in v))
                                 for v in found))
    return flags


def _megabyte_seconds(cases: list[Case], engine: str) -> float:
    """Time to scan about 1 MB made of the corpus, repeated."""
    text = "\n".join(c.text for c in cases)
    big = ((text + "\n") * (1_000_000 // len(text) + 1)).rstrip("\n")
    t0 = time.perf_counter()
    if engine == "longrun":
        Redactor().redact(big)
        return time.perf_counter() - t0
    from detect_secrets.settings import default_settings

    with tempfile.TemporaryDirectory() as workdir, default_settings():
        t0 = time.perf_counter()
        _detect_secrets_findings(big, engine, workdir)
        return time.perf_counter() - t0


def evaluate() -> tuple[Table, dict[str, list[str]]]:
    cases = corpus()
    secrets = [c for c in cases if c.secret]
    bait = [c for c in cases if not c.secret]
    table = Table(
        "Redaction against detect-secrets on one corpus",
        ["engine", f"caught (of {len(secrets)})", "missed", f"false positives (of {len(bait)} bait)", "1 MB of the corpus"],
    )
    details: dict[str, list[str]] = {}
    engines: list[tuple[str, str, Callable[[list[Case]], list[bool]]]] = [("longrun", "longrun", longrun_verdicts)]
    try:
        import detect_secrets  # noqa: F401

        engines += [
            ("detect-secrets, `scan` (defaults)", "scan", lambda cs: detect_secrets_verdicts(cs, "scan")),
            ("detect-secrets, `scan_line` (adhoc)", "adhoc", lambda cs: detect_secrets_verdicts(cs, "adhoc")),
        ]
    except ImportError:
        table.notes.append("detect-secrets is not installed (`pip install -e '.[bench]'`): only longrun was measured")
    for name, engine, verdicts in engines:
        progress(f"redaction_eval: {name}")
        flags = verdicts(cases)
        caught = [c.name for c, f in zip(cases, flags, strict=True) if c.secret and f]
        missed = [c.name for c, f in zip(cases, flags, strict=True) if c.secret and not f]
        false = [c.name for c, f in zip(cases, flags, strict=True) if not c.secret and f]
        mb = _megabyte_seconds(cases, engine)
        table.add(name, str(len(caught)), str(len(missed)), str(len(false)), f"{mb:.2f} s")
        details[f"{name}: missed"] = missed
        details[f"{name}: false positives"] = false
    table.notes += [
        "Caught: no piece of the secret (5+ characters between punctuation) is left in longrun's output / detect-secrets reports a finding overlapping it (for a "
        "private key block, its BEGIN line). False positive: longrun changes a bait line / detect-secrets reports "
        "anything on it.",
        "detect-secrets under `default_settings()` (every plugin, the entropy limits 4.5 base64 / 3.0 hex, its heuristic "
        "filters): `scan` is `scan_file` on each case written to a file, as `detect-secrets scan` runs; `adhoc` is "
        "`scan_line` per line, as `detect-secrets scan --string` runs (eager: it reports every high-entropy candidate).",
    ]
    return table, details


def run() -> Section:
    t0 = time.perf_counter()
    table, details = evaluate()
    for key, names in details.items():
        table.notes.append(f"{key}: {', '.join(names) or 'none'}")
    return Section("redaction_eval", [table], seconds=time.perf_counter() - t0,
                   reproduce="python -m bench.redaction_eval")


if __name__ == "__main__":
    section = run()
    for t in section.tables:
        print(t.markdown())

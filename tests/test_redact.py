"""Redaction: each secret kind is redacted and named, ordinary code is left alone."""

from __future__ import annotations

import uuid

import pytest

from longrun.errors import ConfigError
from longrun.redact import Redactor, default_redactor, split_patterns

R = Redactor()

# Canary values assembled at run time so that this file itself holds no secret-shaped literal.
ANT = "sk-ant-api03-" + "Zq8" * 10
OAI = "sk-proj-" + "a1B2" * 8
AKIA = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GHP = "ghp_" + "A1b2C3d4E5" * 4
GHPAT = "github_pat_" + "11ABCDEFG0_" * 4
SLACK = "xoxb-" + "123456789012-abcdefghijkl"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nZm9vYmFy==\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"ANTHROPIC_API_KEY={ANT}", "ANTHROPIC_API_KEY=[REDACTED:anthropic_key]"),
        (f'OpenAI(api_key="{OAI}")', 'OpenAI(api_key="[REDACTED:openai_key]")'),
        (f"key id {AKIA} here", "key id [REDACTED:aws_access_key] here"),
        (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED:aws_secret_key]"),
        (f"token {GHP}", "token [REDACTED:github_token]"),
        (f"{GHPAT}", "[REDACTED:github_token]"),
        (f"SLACK={SLACK}", "SLACK=[REDACTED:slack_token]"),
        ("Authorization: Bearer abcdef0123456789abcdef", "Authorization: Bearer [REDACTED:bearer_token]"),
        (f"cookie {JWT};", "cookie [REDACTED:jwt];"),
        (f"before\n{PEM}\nafter", "before\n[REDACTED:private_key]\nafter"),
        ("postgres://app:hunter2@db.local:5432/x", "postgres://app:[REDACTED:url_password]@db.local:5432/x"),
        ("redis://:s3cret@cache/0", "redis://:[REDACTED:url_password]@cache/0"),
        ("password=hunter2", "password=[REDACTED:password]"),
        ('DB_PASSWORD: "correct horse battery"', 'DB_PASSWORD: "[REDACTED:password]"'),
        ('{"token": "abcd1234efgh"}', '{"token": "[REDACTED:token]"}'),
        ("secret = 'topsecretvalue'", "secret = '[REDACTED:secret]'"),
        ("api_key=abc123def", "api_key=[REDACTED:api_key]"),
        ("https://x.io/cb?token=abc123&x=1", "https://x.io/cb?token=[REDACTED:token]&x=1"),
    ],
)
def test_each_kind_is_redacted(text: str, expected: str) -> None:
    assert R.redact(text) == expected


def test_truncated_private_key_block_is_redacted() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU="
    assert R.redact(text) == "[REDACTED:private_key]"


NORMAL_CODE = [
    "max_tokens=4096",
    "usage.input_tokens + usage.cache_read_input_tokens",
    "token = self.token",
    'password: str = request.form["password"]',
    "def check_token(token: Optional[str] = None) -> bool:",
    "if password == confirm_password:",
    "task-runner-skeleton-abcdefghijklmnopqrstu",
    "from sklearn.ensemble import RandomForestClassifier",
    "digest e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "AKIA is the prefix of AWS access keys",
    "see https://example.com/path/to:thing@2x.png",
    "git@github.com:org/repo.git",
    "http://localhost:8080/api",
    "secret_santa_list = []",
    "TOKEN_LIMIT = MAX_TOKENS",
    "Bearer tokens go in the Authorization header",
]


@pytest.mark.parametrize("text", NORMAL_CODE)
def test_ordinary_code_is_untouched(text: str) -> None:
    assert R.redact(text) == text


def test_uuids_and_digests_are_untouched() -> None:
    text = "\n".join(f"id={uuid.uuid4()} sha256={uuid.uuid4().hex}{uuid.uuid4().hex}" for _ in range(200))
    assert R.redact(text) == text


def test_redaction_is_idempotent() -> None:
    text = f"{ANT} {OAI} {JWT} password=hunter2 postgres://a:b@c/d Bearer abcdef0123456789abcdef {PEM}"
    once = R.redact(text)
    assert R.redact(once) == once
    assert "hunter2" not in once and ANT not in once


def test_redact_json_walks_and_does_not_mutate() -> None:
    value = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": f"key {ANT}"}]}],
        "api_key": "plainlooking",
        "password": "x",
        "max_tokens": 4096,
        "nested": ({"note": "postgres://u:pw12@h/db"},),
        "flag": True,
    }
    out = R.redact_json(value)
    assert out["messages"][0]["content"][0]["text"] == "key [REDACTED:anthropic_key]"
    assert out["api_key"] == "[REDACTED:api_key]" and out["password"] == "[REDACTED:password]"
    assert out["max_tokens"] == 4096 and out["flag"] is True
    assert out["nested"][0]["note"] == "postgres://u:[REDACTED:url_password]@h/db"
    assert value["api_key"] == "plainlooking"  # the input is untouched


def test_extra_patterns_from_env() -> None:
    r = Redactor.from_env({"LONGRUN_REDACT_PATTERNS": r"CANARY-[0-9]{4,8},internal_(?P<secret>[a-z]+)_id"})
    assert r.redact("x CANARY-12345 y") == "x [REDACTED:custom] y"
    assert r.redact("internal_abc_id") == "internal_[REDACTED:custom]_id"
    assert r.redact(ANT) == "[REDACTED:anthropic_key]"  # defaults stay on


def test_split_patterns() -> None:
    assert split_patterns(r"a{1,3},b[,x],c\,d") == [r"a{1,3}", r"b[,x]", r"c\,d"]
    assert split_patterns("x,y\nz") == ["x,y", "z"]
    assert split_patterns("") == []


def test_bad_extra_pattern_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        Redactor(["(unclosed"])
    with pytest.raises(ConfigError, match="matches the empty string"):
        Redactor(["x*"])


def test_default_redactor_is_cached() -> None:
    assert default_redactor() is default_redactor()


def test_large_text_is_redacted_to_its_end() -> None:
    """9 MB of code that names tokens and passwords: only the key at the end changes. (Time goes
    to `python -m bench.run --only redaction`; a wall-clock bound here failed on a loaded machine.)"""
    chunk = "def handler(token: str, max_tokens: int = 4096) -> dict:\n    return {'password': check(pw)}\n"
    text = chunk * 100_000 + f"\n{ANT}\n"  # ~9 MB
    out = R.redact(text)
    assert out == chunk * 100_000 + "\n[REDACTED:anthropic_key]\n"


# ------------------------------------------------------------------ issue 15, finding 5: the gaps

PGP = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF" + "x9Zk" * 16
       + "\n=Ab3d\n-----END PGP PRIVATE KEY BLOCK-----")
STRIPE_LIVE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_RESTRICTED = "rk_live_" + "51H8xyzABCDEFGHIJKLmnopq"
GOOGLE = "AIza" + "SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"
GITLAB = "glpat-" + "xK9pQ2mN7vL4tR8sW1yZ"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
XAPP = "xapp-1-A0123456789-1234567890123-" + "abcdef0123456789" * 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key:\n{PGP}\nend", "key:\n[REDACTED:private_key]\nend"),
        ("postgres://app:pa/ss#w@rd@db.internal:5432/prod", "postgres://app:[REDACTED:url_password]@db.internal:5432/prod"),
        ("mysql://root:p@ssw0rd@localhost/db", "mysql://root:[REDACTED:url_password]@localhost/db"),
        ("amqp://guest:a#b/c@rabbit:5672", "amqp://guest:[REDACTED:url_password]@rabbit:5672"),
        ("PGPASSWORD=correcthorse psql -h db", "PGPASSWORD=[REDACTED:password] psql -h db"),
        ("export PGPASSWORD=s3cr3t", "export PGPASSWORD=[REDACTED:password]"),
        ("db.internal:5432:prod:app:Tr0ub4dor&3", "db.internal:5432:prod:app:[REDACTED:pgpass]"),
        ("*:*:*:postgres:letmeinplease", "*:*:*:postgres:[REDACTED:pgpass]"),
        ("password=letmein", "password=[REDACTED:password]"),
        ("db_password = correcthorse", "db_password = [REDACTED:password]"),
        (f"SLACK_APP_TOKEN={XAPP}", "SLACK_APP_TOKEN=[REDACTED:slack_token]"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED:basic_auth]"),
        ('-H "authorization: basic YWxhZGRpbjpvcGVuc2VzYW1l"', '-H "authorization: basic [REDACTED:basic_auth]"'),
        (f"stripe {STRIPE_LIVE}", "stripe [REDACTED:stripe_key]"),
        (f"restricted {STRIPE_RESTRICTED}", "restricted [REDACTED:stripe_key]"),
        (f"maps key {GOOGLE}", "maps key [REDACTED:google_api_key]"),
        (f"CI_JOB {GITLAB}", "CI_JOB [REDACTED:gitlab_token]"),
        (f"//registry.npmjs.org/:_authToken={NPM}", "//registry.npmjs.org/:_authToken=[REDACTED:npm_token]"),
        (f"HF_TOKEN {HF}", "HF_TOKEN [REDACTED:huggingface_token]"),
        # a key glued to a name by a hyphen (the telemetry review found `tool-sk-ant-...` kept whole)
        ("tool-sk-ant-api03-" + "Ab9" * 12, "tool-[REDACTED:anthropic_key]"),
        ("run-sk-proj-" + "Zz8" * 10, "run-[REDACTED:openai_key]"),
    ],
)
def test_the_gaps_the_review_found_are_redacted(text: str, expected: str) -> None:
    assert R.redact(text) == expected


@pytest.mark.parametrize("text", [
    "https://registry.npmjs.org:443/@scope/pkg",
    "http://localhost:8080/users/@me",
    "connect(password=password)",
    "password = getpass.getpass()",
    "password=None",
    "a basic understanding of the system",
    "src/app.py:42:10: E501 line too long",
    "12:30:45 INFO started",
    "hf_hub_download(repo_id=repo)",
    "import npm_utils",
    "AIza is the prefix of Google API keys",
])
def test_the_new_patterns_leave_ordinary_text_alone(text: str) -> None:
    assert R.redact(text) == text


def _hex(n: int) -> str:
    return ("0123456789abcdef" * (n // 16 + 1))[:n][::-1]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("SENDGRID=SG." + "aB3dE6gH9jK2mN5pQ8sT1v" + "." + "wX4yZ7aB0cD3eF6gH9iJ2kL5mN8oP1qR4sT7uV0wX3y", "sendgrid_key"),
        ("twilio " + "SK" + _hex(32), "twilio_key"),
        ("AccountName=x;AccountKey=" + "Ab3+" * 22 + "==;EndpointSuffix=core.windows.net", "azure_storage_key"),
        ("MAILCHIMP " + _hex(32) + "-us12", "mailchimp_key"),
        ("DISCORD " + "M" + "Tk4NzY1NDMyMTA5ODc2NTQz" + "." + "GhIjKl" + "." + "mNoPqRsTuVwXyZaBcDeFgHiJkLm", "discord_token"),
        ("TELEGRAM " + "1621243916" + ":AA" + "Hx5sUA1WbQGr9zJ866wCphmtA35aKd_0x", "telegram_bot_token"),
    ],
)
def test_the_kinds_detect_secrets_catches_are_redacted_too(text: str, kind: str) -> None:
    assert f"[REDACTED:{kind}]" in R.redact(text)


def test_the_evaluation_corpus_all_caught_no_bait_touched() -> None:
    """bench/redaction_eval.py's corpus (the formats of the review, detect-secrets' kinds, and
    bait: git SHAs, UUIDs, base64 images, hex digests, lockfile hashes, code naming passwords)."""
    from bench.redaction_eval import corpus, leaks

    for case in corpus():
        out = R.redact(case.text)
        if case.secret:
            assert not leaks(case.secret, out), (case.name, out)
        else:
            assert out == case.text, case.name


# ------------------------------------------------------------------ issue 24, finding 5: more gaps

SENTRY = "4f6a" + "0c1d2e3f4a5b6c7d8e9f0a1b2c3d"
ESCAPED_PEM_HEAD = '"private_key": "-----BEGIN ' + 'PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0B\\nAQEFAASCBKcwggSjAgEAAoIBAQC7'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # .netrc, one line and the multi-line form
        ("machine api.heroku.com login me@example.com password 01a2b3c4-d5e6",
         "machine api.heroku.com login me@example.com password [REDACTED:netrc_password]"),
        ("machine github.com password hunter2horse login bot",
         "machine github.com password [REDACTED:netrc_password] login bot"),
        ("default login anonymous password guest@example.org",
         "default login anonymous password [REDACTED:netrc_password]"),
        ("machine x.example.com\n  login deploy\n  password correcthorse\n",
         "machine x.example.com\n  login deploy\n  password [REDACTED:netrc_password]\n"),
        ("machine y\nlogin deploy password s3cret\n", "machine y\nlogin deploy password [REDACTED:netrc_password]\n"),
        # *_KEY= lines of env files, shell and compose files
        (f"SENTRY_AUTH_KEY={SENTRY}", "SENTRY_AUTH_KEY=[REDACTED:env_key]"),
        (f"export SIGNING_KEY='{SENTRY}'", "export SIGNING_KEY='[REDACTED:env_key]'"),
        (f"      ENCRYPTION_KEY: {SENTRY}", "      ENCRYPTION_KEY: [REDACTED:env_key]"),
        ("APP_SECRET=Zm9vYmFyYmF6cXV4", "APP_SECRET=[REDACTED:secret]"),
        # a YAML or .env password runs on past an `&`
        ("password: abc&def123", "password: [REDACTED:password]"),
        ("  db_password: Tr0ub&dor&3x", "  db_password: [REDACTED:password]"),
        ("PASSWORD=pa&ss&word9", "PASSWORD=[REDACTED:password]"),
        # a URL query still ends a value at `&name=`
        ("https://x.io/cb?token=abc123&x=1&password=s3cret&y=2",
         "https://x.io/cb?token=[REDACTED:token]&x=1&password=[REDACTED:password]&y=2"),
    ],
)
def test_the_gaps_of_issue_24_are_redacted(text: str, expected: str) -> None:
    assert R.redact(text) == expected


def test_a_key_in_a_json_string_cut_before_its_end_is_redacted() -> None:
    """A one-line JSON key file (a cloud service account's) cut at read_file's line limit: the
    block has no END line, and its line breaks are the two characters backslash and n."""
    out = R.redact(ESCAPED_PEM_HEAD + "x9Zk" * 40)
    assert "MIIEvQIBADANBgkqhkiG9w0B" not in out and "AQEFAASCBKcwggSj" not in out and "x9Zkx9Zk" not in out
    assert out == '"private_key": "[REDACTED:private_key]'


@pytest.mark.parametrize("text", [
    "API_KEY_NAME=header",
    "API_KEY_HEADER = 'X-Api-Key'",
    'SECRET_KEY=os.environ["DJANGO_SECRET_KEY"]',
    "SECRET_KEY = env('SECRET_KEY')",
    "password: ${DB_PASSWORD}",
    "password: {{ .Values.db.password }}",
    "SORT_KEY=name",
    'CACHE_KEY = "user:{id}"',
    "PRIMARY_KEY = True",
    "let password = &args[1];",
    "let password = &self.password;",
    "if (password && confirm) submit();",
    "the machine learning course explains password hashing with bcrypt",
    "password hashing uses bcrypt and a salt per user, see below",
    "    password given by the user, checked against the stored hash",
    "netrc: machine, login and password tokens",
])
def test_the_issue_24_patterns_leave_code_and_prose_alone(text: str) -> None:
    assert R.redact(text) == text


@pytest.mark.parametrize("prefix", ["", "     3\t", "config/.netrc:12:"])
def test_line_rules_hold_inside_read_file_and_grep_prefixes(prefix: str) -> None:
    """read_file shows `{lineno:>6}\\t{line}` and grep `relpath:lineno:line`: a rule for a line of
    its own (a multi-line .netrc's `password`, a `.pgpass` line) must see through the prefix."""
    assert R.redact(f"{prefix}  password correcthorse") == f"{prefix}  password [REDACTED:netrc_password]"
    assert R.redact(f"{prefix}db.internal:5432:prod:app:Tr0ub4dor&3") == f"{prefix}db.internal:5432:prod:app:[REDACTED:pgpass]"


def test_an_openssh_key_body_without_its_begin_line_is_redacted() -> None:
    """A command's `tail -n +2 id_ed25519`: the body's first characters say "openssh-key-v1"."""
    magic = "b3BlbnNzaC1" + "rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
    lines = [magic, "QyNTUxOQAAACDjKqp5Fc65tEnRulDqKiy7Gm4B+QvaJFotHYdpfRiiZQAAAJgAAAAAAAAAAA",
             "AAtzc2gtZWQyNTUxOQAAACDjKqp5Fc65tEnRulDqKiy7Gm4B+QvaJFotHYdpfRiiZQ=="]
    out = R.redact("$ tail -n +2 id_ed25519\n" + "\n".join(lines) + "\n" + "-----END OPENSSH " + "PRIVATE KEY-----\n")
    assert out == "$ tail -n +2 id_ed25519\n[REDACTED:private_key]\n" + "-----END OPENSSH " + "PRIVATE KEY-----\n"
    numbered = "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(lines, 2))
    assert R.redact(numbered) == "     2\t[REDACTED:private_key]\n"

"""Redaction: each secret kind is redacted and named, ordinary code is left alone."""

from __future__ import annotations

import time
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


def test_large_text_is_fast() -> None:
    chunk = "def handler(token: str, max_tokens: int = 4096) -> dict:\n    return {'password': check(pw)}\n"
    text = chunk * 100_000 + f"\n{ANT}\n"  # ~9 MB
    start = time.perf_counter()
    out = R.redact(text)
    assert time.perf_counter() - start < 5.0
    assert out.endswith("[REDACTED:anthropic_key]\n")

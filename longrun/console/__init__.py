"""The longrun console: a JSON API and web pages for approvers and operators (`longrun serve`).

A thin ASGI app over the same store and client API the CLI uses; it keeps sessions and nothing
else of its own. Decisions made here are signed with the person's console key and verified by the
worker like any other (see `auth` for how signing in works). docs/API.md documents the API.

| module | job |
|---|---|
| `app` | the FastAPI app, error mapping, security headers |
| `auth` | sign-in, sessions, roles, CSRF, the signer of a request |
| `session_mac` | the console's own key, and the MAC on every session row |
| `throttle` | sign-in limits, the key-derivation pool, the budget of audited refusals |
| `body_limit` | the cap on request bodies (413) |
| `api` | the JSON API |
| `starts` | `POST /api/runs`: starting runs, idempotent by key |
| `pages` | the server-rendered pages |
| `views` | what the pages and the API show, from PostgreSQL |
| `feeds` | the live feeds behind server-sent events |
| `context` | what requests share (store, Temporal client, feeds) |
"""

from longrun.console.app import create_app
from longrun.console.context import Console
from longrun.console.session_mac import KEY_FILE as SESSION_KEY_FILE
from longrun.console.session_mac import SECRET_VARIABLE as SESSION_SECRET_VARIABLE

__all__ = ["SESSION_KEY_FILE", "SESSION_SECRET_VARIABLE", "Console", "create_app"]

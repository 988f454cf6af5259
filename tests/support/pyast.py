"""`ast.parse` for the tests that read our own source, with the garbage collector off.

Why: on CPython 3.11.7 a collection during a parse can run a finalizer (an unclosed transport's
`__del__`, say) whose warning pytest formats with `ast.parse` again: re-entrant AST construction
(gh-106905) then fails as `SystemError: AST constructor recursion depth mismatch` in the test
that happened to be parsing, for a leak elsewhere. With the collector off the finalizer runs after
the parse, and its warning is reported where pytest reports leaks, not as this test's failure."""

from __future__ import annotations

import ast
import gc


def parse(source: str) -> ast.Module:
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()

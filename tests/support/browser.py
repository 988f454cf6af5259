"""Debian's Chromium driven by Playwright, for the console's browser tests: one helper instead of
a copy per file, and one place that stops the driver cleanly.

Why the exit is guarded: `sync_playwright().__exit__` closes the driver's pipe, runs the loop
until its transport ends, then cancels what is left and closes the loop. On a loaded machine the
driver (node) may not have exited by then, and its asyncio subprocess transport is left to the
garbage collector, which warns `unclosed transport ... subprocess is still running` whenever a
collection next runs: in whichever test happens to be running then (pytest turns it into an error
there, and on CPython 3.11.7 it once broke `ast.parse` in `test_import_graph`). We wait for the
driver to exit and collect that transport here, where its cause is known, instead."""

from __future__ import annotations

import gc
import os
import shutil
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = os.environ.get("LONGRUN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER_EXIT_SECONDS = 10.0


def require_chromium() -> str:
    """The Chromium binary, or skip the calling test module with what to install."""
    if CHROMIUM is None:
        pytest.skip("the browser tests need Debian's chromium (no `chromium` on PATH): `apt-get install -y chromium`, "
                    "or set LONGRUN_CHROMIUM to a Chromium binary", allow_module_level=True)
    return CHROMIUM


@contextmanager
def chromium() -> Iterator[Browser]:
    """A launched Chromium, closed with its driver on exit."""
    from playwright.sync_api import sync_playwright

    manager = sync_playwright()
    playwright = manager.__enter__()
    driver = getattr(getattr(getattr(manager, "_client", None), "_transport", None), "_proc", None)
    try:
        browser = playwright.chromium.launch(executable_path=require_chromium(), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            manager.__exit__(None, None, None)
            _wait_for_exit(getattr(driver, "pid", None))
            del manager, playwright, driver
            gc.collect()


def _wait_for_exit(pid: int | None) -> None:
    """Reap the driver if the loop could not (bounded: a driver that hangs is killed)."""
    if pid is None:
        return
    deadline = time.monotonic() + DRIVER_EXIT_SECONDS
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # already reaped (by the loop's child watcher)
            return
        if done:
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)

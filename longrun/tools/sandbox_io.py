"""A command's output, read through pipes and kept only up to a cap.

Why not a spool file: the worker reads back at most a few hundred kB of each stream, but a file
the command writes to directly grows as long as the command writes (the review spooled 300 MiB
onto the worker's disk). Here the worker reads both pipes itself, writes the first `keep` bytes of
each to the caller's file, counts and drops the rest, and still drains to the end so the command
never blocks on a full pipe. The wall-time limit is enforced in the same loop.

Tests: tests/test_sandbox_limits.py (the stdout flood).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

CHUNK = 1 << 16
LINGER = 2.0
"""Seconds to keep reading after the command's first process ended (a process it left behind that
still holds the pipes, under `none`, is killed with its group; its pipes are then given up)."""


@dataclass
class Sink:
    """One stream: what is kept (in `file`, at most `keep` bytes) and how much the command wrote."""

    file: IO[bytes]
    keep: int
    total: int = 0
    kept: int = field(default=0)

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.keep - self.kept
        if room > 0:
            self.file.write(data[:room])
            self.kept += min(room, len(data))


def pump(proc: subprocess.Popen[bytes], sinks: dict[int, Sink], timeout: float,
         kill: Callable[[], None]) -> tuple[int, bool]:
    """Read the command's pipes (fd -> sink) until they close, killing it (`kill`) at the timeout.

    Returns:
        (exit code, whether the wall-time limit killed it).
    """
    deadline = time.monotonic() + timeout
    timed_out = False
    ended_at: float | None = None
    with selectors.DefaultSelector() as sel:
        for fd, sink in sinks.items():
            sel.register(fd, selectors.EVENT_READ, sink)
        while sel.get_map():
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                kill()
            if ended_at is None and proc.poll() is not None:
                ended_at = now
                kill()  # what it left in its group ends with it
            if ended_at is not None and now - ended_at > LINGER:
                break
            for key, _ in sel.select(max(0.0, min(0.25, deadline - now)) if not timed_out else 0.25):
                data = os.read(key.fd, CHUNK)
                if data:
                    key.data.feed(data)
                else:
                    sel.unregister(key.fd)
    remaining = deadline - time.monotonic()
    if not timed_out:
        try:
            return proc.wait(timeout=max(0.0, remaining)), False
        except subprocess.TimeoutExpired:
            timed_out = True
            kill()
    return proc.wait(), timed_out

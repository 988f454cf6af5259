"""Opening workspace files without following a link and without blocking on a special file.

Two attacks this module answers (issue 24, findings 1 and 3), both open to a malicious
repository or to a model that runs an allowed command:

- A FIFO (`mkfifo src/cache.txt`): `open()` for reading waits for a writer, forever, holding one
  of the worker's activity threads; retries take more. A socket or a device is no text either.
  `open_regular` opens with `O_NONBLOCK | O_NOFOLLOW`, `fstat`s the descriptor and accepts a
  regular file only (then clears `O_NONBLOCK`), so every reader gets an answer at once: the file,
  or `NotRegularFile`. `special_kind` says what a path is from `lstat`, without opening it.
- A symlink in an effect's path (`docs/guide.md -> ../conftest.py`): scopes, the RUNS CODE
  warning and the change set judge the path as written. `first_symlink` walks a path one
  component at a time, each directory opened relative to the one before with `O_NOFOLLOW`, and
  names the first link; `open_dir_nofollow` opens a resolved directory the same way for a write,
  so a link swapped in after the check fails the write instead of redirecting it.

Component walks rather than `openat2(RESOLVE_NO_SYMLINKS)`: they run on every kernel and every
POSIX system, and a dozen lines are easier to audit than a ctypes binding.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from longrun.errors import NotRegularFile

_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""How a directory on the way is opened: `O_PATH` (Linux) needs only search permission, as a
plain path lookup does, so a 0711 home directory on the way works; the descriptor serves as
`dir_fd` for the *at calls and nothing else."""
_KINDS = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"), (stat.S_ISLNK, "symlink"), (stat.S_ISDIR, "directory"))


def kind_of(mode: int) -> str:
    """What a file of this `st_mode` is, in words ("regular file", "FIFO", "socket", ...)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "regular file" if stat.S_ISREG(mode) else "special file"


def special_kind(path: Path) -> str | None:
    """None for a regular file, a directory or a missing path; else what it is ("FIFO",
    "socket", "symlink", a device), from `lstat`: nothing is opened."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return kind_of(mode)


def not_regular(shown: str, kind: str, what_to_do: str = "") -> NotRegularFile:
    """The refusal for a special file, naming it and what to do."""
    return NotRegularFile(
        f"{shown!r} is a {kind}, not a regular file; tools read and edit regular files only"
        + (f": {what_to_do}" if what_to_do else ": a command the run allows can inspect or replace it")
    )


def open_regular(path: Path, shown: str | None = None) -> BinaryIO:
    """Open a regular file for reading in binary mode, never blocking and never following a
    link in the last component (resolve first, with `confine`, where links may be followed).

    Args:
        path: the file (for a read tool the resolved path; for an effect the checked one).
        shown: how error messages name it (the path the model gave); default `path`.

    Raises:
        NotRegularFile: it is a FIFO, a socket, a device, a directory or a symlink.
        OSError: it does not exist, or cannot be opened.
    """
    name = shown if shown is not None else str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # a link; a socket; a directory
            kind = special_kind(path)
            if kind is not None or exc.errno == errno.EISDIR:
                raise not_regular(name, kind or "directory") from exc
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_regular(name, kind_of(mode))
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, limit: int, shown: str | None = None) -> bytes | None:
    """A regular file's bytes, or None when it is larger than `limit` (checked on the open
    descriptor, so the size is the size of what is read). Raises as `open_regular`."""
    with open_regular(path, shown) as f:
        if os.fstat(f.fileno()).st_size > limit:
            return None
        data = f.read(limit + 1)
    return None if len(data) > limit else data


def first_symlink(root: Path, parts: Sequence[str]) -> int | None:
    """The index in `parts` of the first component of `root/parts...` that is a symlink, or None.

    `root` is opened as it is (resolve it first); each later directory is opened relative to the
    one before with `O_NOFOLLOW`, so the answer is about the components themselves, and a link
    swapped in during the walk is reported rather than followed. The walk stops at the first
    component that does not exist or is not a directory: nothing below it can be a link.
    """
    fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        for index, name in enumerate(parts):
            try:
                mode = os.lstat(name, dir_fd=fd).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return None
            if stat.S_ISLNK(mode):
                return index
            if index == len(parts) - 1 or not stat.S_ISDIR(mode):
                return None
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # became a link since the lstat
                    return index
                raise
            os.close(fd)
            fd = child
        return None
    finally:
        os.close(fd)


def open_dir_nofollow(directory: Path, *, create: bool = False) -> int:
    """A descriptor of `directory` (absolute, already resolved) opened from `/` one component at
    a time with `O_NOFOLLOW`: a symlink anywhere on the way fails with ELOOP instead of being
    followed. With `create`, missing directories are made (mode 0o777 less the umask, as
    `mkdir -p`). The caller closes the descriptor.

    Raises:
        OSError: ELOOP for a link on the way, ENOENT for a missing directory without `create`.
    """
    if not directory.is_absolute():
        raise ValueError(f"open_dir_nofollow needs an absolute path, got {directory}")
    fd = os.open("/", _DIR_FLAGS)
    try:
        for name in directory.parts[1:]:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made by another writer meanwhile
                    os.mkdir(name, 0o777, dir_fd=fd)
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:  # O_PATH|O_NOFOLLOW on a link: ENOTDIR; without O_PATH: ELOOP
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode):
                    raise OSError(errno.ELOOP, f"{name!r} in {directory} is a symlink; nothing is written through "
                                  "one") from exc
                raise
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


__all__ = ["first_symlink", "kind_of", "not_regular", "open_dir_nofollow", "open_regular", "read_regular",
           "special_kind"]

"""The console's own guards, as parts (`longrun.console.session_mac`, `longrun.console.throttle`):
a session MAC that any change to the row breaks and that two consoles sharing `$LONGRUN_HOME`
agree on; key derivations that never run more than two at a time, with a bounded queue; a
budget of audited refusals per person. `tests/test_console_abuse.py` shows the same over HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from longrun.console.errors import TooManyRequests
from longrun.console.session_mac import KEY_FILE, SECRET_VARIABLE, load_session_mac
from longrun.console.throttle import Derivations, RefusalBudget
from longrun.errors import ConfigError

CREATED = datetime(2027, 1, 10, 12, 0, 0, 123456, tzinfo=UTC)
EXPIRES = CREATED + timedelta(hours=8)
ROW = ("ab" * 32, "alice", "k" * 32, CREATED, EXPIRES)


def test_a_session_mac_covers_the_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    mac = load_session_mac(tmp_path)
    signed = mac.sign(*ROW)
    assert mac.check(signed, *ROW)
    assert not mac.check(None, *ROW) and not mac.check("", *ROW)
    token, principal, key_id, created, expires = ROW
    assert not mac.check(signed, token, "mallory", key_id, created, expires)
    assert not mac.check(signed, token, principal, "0" * 32, created, expires)
    assert not mac.check(signed, token, principal, key_id, created, expires + timedelta(days=30))
    assert not mac.check(signed, "cd" * 32, principal, key_id, created, expires)
    # the same instant read back in another time zone checks the same
    assert mac.check(signed, token, principal, key_id, created.astimezone(), expires.astimezone())


def test_consoles_sharing_a_home_share_the_key_and_others_do_not(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    home = tmp_path / "home"
    made: list[bytes] = []
    threads = [threading.Thread(target=lambda: made.append(load_session_mac(home).key)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == 1  # consoles starting at once end up with one key
    assert (home / KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert [p.name for p in home.iterdir()] == [KEY_FILE]
    first, again = load_session_mac(home), load_session_mac(home)
    signed = first.sign(*ROW)
    assert again.check(signed, *ROW)
    stranger = load_session_mac(tmp_path / "elsewhere")
    assert not stranger.check(signed, *ROW) and stranger.other_key(signed) and not first.other_key(signed)

    (home / KEY_FILE).chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        load_session_mac(home)


def test_the_secret_variable_wins_and_must_be_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_VARIABLE, "s" * 40)
    a, b = load_session_mac(tmp_path / "one"), load_session_mac(tmp_path / "two")
    assert a.key == b.key == hashlib.sha256(b"longrun console session mac v1|secret|" + b"s" * 40).digest()
    assert not (tmp_path / "one").exists()  # no key file is made
    monkeypatch.setenv(SECRET_VARIABLE, "short")
    with pytest.raises(ConfigError, match="at least 32 characters"):
        load_session_mac(tmp_path)


def test_derivations_run_two_at_a_time_behind_a_bounded_queue() -> None:
    pool = Derivations(workers=2, max_waiting=4)
    gate = threading.Event()

    def derive(i: int) -> int:
        gate.wait(10)
        return i

    async def main() -> tuple[list[int], int]:
        async def one(i: int) -> int:
            async with pool.admitted():
                return await pool.run(derive, i)

        tasks = [asyncio.create_task(one(i)) for i in range(6)]
        await asyncio.sleep(0)  # all six admitted: two running, four waiting
        refused = 0
        for _ in range(3):
            try:
                async with pool.admitted():
                    pass
            except TooManyRequests as exc:
                assert exc.status == 429 and exc.retry_after and "try again" in exc.message
                refused += 1
        gate.set()
        return list(await asyncio.gather(*tasks)), refused

    try:
        results, refused = asyncio.run(main())
    finally:
        pool.close()
    assert results == list(range(6)) and refused == 3
    assert pool.peak == 2  # never more derivations at once than the pool's threads


def test_a_refusal_budget_per_person() -> None:
    budget = RefusalBudget(per_window=3, window=60)
    assert [budget.allow("vera") for _ in range(5)] == [True, True, True, False, False]
    assert budget.allow("otto")  # each person has their own

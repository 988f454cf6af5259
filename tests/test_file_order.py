"""The order `make test` hands files to its workers (tests/conftest.py): longest first by a measured
table, a file's tests kept together and in their own order, a file the table does not know placed
at the median, and the table read from a real `--durations` report."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tests.support.file_seconds import TABLE, longest_first, seconds_per_file

REPORT = """\
============================= slowest 5 durations ==============================
267.49s call     tests/test_b.py::test_one
129.45s setup    tests/test_c.py::test_x[param-1]
110.22s call     tests/test_c.py::test_x[param-1]
  0.50s teardown tests/test_b.py::test_one
(2 durations < 0.005s hidden.  Use -vv to show these durations.)
1 failed, 1300 passed, 3 skipped in 1935.56s (0:32:15)
"""


@dataclass
class Item:
    nodeid: str


def test_the_table_sums_setup_call_and_teardown_per_file() -> None:
    assert seconds_per_file(REPORT) == {"tests/test_c.py": 239.7, "tests/test_b.py": 268.0}
    assert list(seconds_per_file(REPORT)) == ["tests/test_b.py", "tests/test_c.py"], "longest first"


def test_longest_files_first_each_file_whole_and_in_order() -> None:
    table = {"tests/test_slow.py": 300.0, "tests/test_mid.py": 50.0, "tests/test_quick.py": 1.0}
    items = [Item(n) for n in ("tests/test_quick.py::a", "tests/test_new.py::a", "tests/test_mid.py::a",
                               "tests/test_slow.py::b", "tests/test_slow.py::a", "tests/test_new.py::b",
                               "tests/test_mid.py::c")]
    ordered = [i.nodeid for i in longest_first(items, table)]
    assert ordered == ["tests/test_slow.py::b", "tests/test_slow.py::a",
                       "tests/test_new.py::a", "tests/test_new.py::b",  # unknown: the table's median (50), and
                       "tests/test_mid.py::a", "tests/test_mid.py::c",  # a tie keeps the collection order
                       "tests/test_quick.py::a"]


def test_the_checked_in_table_names_files_that_exist() -> None:
    table = json.loads(TABLE.read_text())
    missing = [path for path in table if not (TABLE.parents[1] / path).is_file()]
    assert not missing, f"tests/file_seconds.json names files that are gone (rename or refresh it): {missing}"

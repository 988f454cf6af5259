"""The refactor this sample asks for (README.md): `calc_total` becomes `lines_subtotal`, and the
module `tillbook.reports` moves to `tillbook.reporting.daily`. These tests (and test_reports, which
imports the module from its new place) fail until both are done; the others pass before and after."""

import importlib.util
import re
import unittest

from context import SRC

OLD, NEW = "calc_total", "lines_subtotal"
OLD_MODULE, NEW_MODULE = "tillbook.reports", "tillbook.reporting.daily"


class NamingTest(unittest.TestCase):
    def test_the_subtotal_has_its_new_name(self):
        from tillbook import lines

        self.assertTrue(callable(getattr(lines, NEW, None)), f"tillbook.lines has no {NEW}")
        self.assertFalse(hasattr(lines, OLD), f"tillbook.lines still defines {OLD}")

    def test_no_module_uses_the_old_name(self):
        word = re.compile(rf"\b{OLD}\b")  # calc_total_weight (shipping) is another function
        left = [p.relative_to(SRC).as_posix() for p in sorted((SRC / "tillbook").rglob("*.py"))
                if word.search(p.read_text(encoding="utf-8"))]
        self.assertEqual(left, [], f"modules still naming {OLD}")

    def test_the_reports_module_moved(self):
        self.assertIsNotNone(importlib.util.find_spec(NEW_MODULE), f"{NEW_MODULE} does not exist")
        self.assertFalse((SRC / "tillbook" / "reports.py").exists(), f"{OLD_MODULE} is still there")
        dotted = re.compile(rf"\b{re.escape(OLD_MODULE)}\b")
        left = [p.relative_to(SRC).as_posix() for p in sorted((SRC / "tillbook").rglob("*.py"))
                if dotted.search(p.read_text(encoding="utf-8"))]
        self.assertEqual(left, [], f"modules still importing {OLD_MODULE}")


if __name__ == "__main__":
    unittest.main()

"""The rename this sample asks for (README.md): `calc_total` becomes `lines_subtotal`. These two
tests fail until the whole package uses the new name; the others pass before and after."""

import re
import unittest

from context import SRC

OLD, NEW = "calc_total", "lines_subtotal"


class NamingTest(unittest.TestCase):
    def test_the_subtotal_has_its_new_name(self):
        from tillbook import lines

        self.assertTrue(callable(getattr(lines, NEW, None)), f"tillbook.lines has no {NEW}")
        self.assertFalse(hasattr(lines, OLD), f"tillbook.lines still defines {OLD}")

    def test_no_module_uses_the_old_name(self):
        word = re.compile(rf"\b{OLD}\b")  # calc_total_weight (shipping) is another function
        left = [p.name for p in sorted((SRC / "tillbook").glob("*.py")) if word.search(p.read_text(encoding="utf-8"))]
        self.assertEqual(left, [], f"modules still naming {OLD}")


if __name__ == "__main__":
    unittest.main()

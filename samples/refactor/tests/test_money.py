import unittest

import context  # noqa: F401
from tillbook.money import fmt, pence, share


class MoneyTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual([pence("12.34"), pence("7"), pence("-1.5"), pence("0.05")], [1234, 700, -150, 5])
        with self.assertRaises(ValueError):
            pence("1.234")

    def test_format(self):
        self.assertEqual([fmt(1234), fmt(-150), fmt(5)], ["£12.34", "-£1.50", "£0.05"])

    def test_share_rounds_half_up(self):
        self.assertEqual(share(1798, 20, 100), 360)
        self.assertEqual(share(5, 1, 2), 3)


if __name__ == "__main__":
    unittest.main()

import unittest

from ledger.money import Money, zero


class MoneyTest(unittest.TestCase):
    def test_rounds_half_up(self):
        self.assertEqual(Money("1.005").amount, Money("1.01").amount)

    def test_add_and_subtract(self):
        self.assertEqual(Money("1.50") + Money("2.25"), Money("3.75"))
        self.assertEqual(Money("5.00") - Money("0.01"), Money("4.99"))

    def test_times(self):
        self.assertEqual(Money("19.99").times(3), Money("59.97"))

    def test_currency_mismatch(self):
        with self.assertRaises(ValueError):
            Money("1", "EUR") + Money("1", "USD")

    def test_zero(self):
        self.assertEqual(zero(), Money(0))


if __name__ == "__main__":
    unittest.main()

import unittest

from context import LARGE, SMALL
from tillbook.gift_wrap import wrap_charge
from tillbook.layaway import deposit
from tillbook.lines import Line
from tillbook.quotes import quote
from tillbook.receipts import receipt_line
from tillbook.trade import trade_discount


class ExtrasTest(unittest.TestCase):
    def test_quote(self):
        self.assertEqual(quote(SMALL), "Goods £21.48, to pay £28.03")

    def test_gift_wrap(self):
        self.assertEqual((wrap_charge(SMALL), wrap_charge(LARGE)), (250, 0))

    def test_receipt(self):
        self.assertEqual(receipt_line(LARGE), "8 item(s), goods £58.49")

    def test_deposit(self):
        self.assertEqual(deposit(SMALL), 430)

    def test_trade(self):
        big = [Line("POT-0001", 5, 2450)]
        self.assertEqual(trade_discount([big], SMALL), 107)
        self.assertEqual(trade_discount([SMALL], SMALL), 0)


if __name__ == "__main__":
    unittest.main()

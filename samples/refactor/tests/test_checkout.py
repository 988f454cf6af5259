import unittest

from context import LARGE, SMALL
from tillbook.checkout import Bill, amount_due, bill
from tillbook.lines import Line


class CheckoutTest(unittest.TestCase):
    def test_small_order(self):
        # VAT: 20% of the mugs' £17.98 is £3.596; posted: 860 g
        self.assertEqual(bill(SMALL), Bill(goods=2148, discount=0, vat=360, shipping=295))
        self.assertEqual(amount_due(SMALL), 2803)

    def test_large_order(self):
        # 3 for 2 frees two teas (£7.00); 10% of the remaining £51.49 is £5.15; the standard-rated
        # lines (£37.49 of £58.49) carry £7.79 of the discount, so VAT is 20% of £29.70
        self.assertEqual(bill(LARGE), Bill(goods=5849, discount=1215, vat=594, shipping=0))
        self.assertEqual(amount_due(LARGE), 5228)

    def test_heavy_parcel(self):
        lines = [Line("POT-0001", 1, 2450), Line("BIS-0001", 1, 675)]  # 1350 g, under £40
        self.assertEqual(bill(lines).shipping, 495)

    def test_empty_order(self):
        self.assertEqual(bill([]), Bill(0, 0, 0, 0))


if __name__ == "__main__":
    unittest.main()

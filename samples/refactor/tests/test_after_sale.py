import unittest

from context import LARGE, SMALL
from tillbook.lines import Line
from tillbook.loyalty import points
from tillbook.refunds import refund
from tillbook.vouchers import Voucher, VoucherRefused, redeem


class AfterSaleTest(unittest.TestCase):
    def test_refund_is_pro_rata(self):
        caddy = [Line("CAD-0001", 1, 1299)]
        self.assertEqual(refund(LARGE, caddy), 1161)  # £52.28 * 12.99 / 58.49
        self.assertEqual(refund(LARGE, LARGE), 5228)
        with self.assertRaises(ValueError):
            refund(SMALL, [Line("MUG-0001", 3, 899)])

    def test_points(self):
        self.assertEqual(points(SMALL), 21)
        self.assertEqual(points(LARGE), 46)  # £46.34 after discounts
        self.assertEqual(points(LARGE, member=True), 92)

    def test_vouchers(self):
        self.assertEqual(redeem(Voucher("TEA5", 500, 2000), SMALL), 500)
        self.assertEqual(redeem(Voucher("ALL", 5000, 0), SMALL), 2148)
        with self.assertRaises(VoucherRefused):
            redeem(Voucher("TEA5", 500, 2000), [Line("TEA-0001", 1, 350)])


if __name__ == "__main__":
    unittest.main()

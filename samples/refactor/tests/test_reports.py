import unittest

from context import LARGE, SMALL
from tillbook.reporting.daily import average_basket, gross_sales, takings


class ReportsTest(unittest.TestCase):
    def test_day(self):
        orders = [SMALL, LARGE]
        self.assertEqual(gross_sales(orders), 7997)
        self.assertEqual(takings(orders), 8031)
        self.assertEqual(average_basket(orders), 3998)

    def test_no_orders(self):
        self.assertEqual((gross_sales([]), takings([]), average_basket([])), (0, 0, 0))


if __name__ == "__main__":
    unittest.main()

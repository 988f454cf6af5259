import unittest

import context
from tillbook.basket import Basket


class BasketTest(unittest.TestCase):
    def test_lines_at_catalogue_prices(self):
        basket = Basket()
        basket.add("TEA-0001")
        basket.add("MUG-0001", 2)
        self.assertEqual(basket.lines(), context.SMALL)
        self.assertEqual(basket.subtotal, 2148)

    def test_remove(self):
        basket = Basket()
        basket.add("MUG-0001", 2)
        basket.remove("MUG-0001")
        self.assertEqual(basket.subtotal, 899)
        basket.remove("MUG-0001")
        self.assertEqual(basket.lines(), [])
        with self.assertRaises(ValueError):
            basket.remove("MUG-0001")

    def test_unknown_sku(self):
        with self.assertRaises(LookupError):
            Basket().add("CUP-9999")


if __name__ == "__main__":
    unittest.main()

import unittest

from depot.items import Item
from depot.locations import parse_location, walk_key
from depot.orders import Order
from depot.picking import pick_list
from depot.skus import parse_sku
from depot.units import packs_for, units_in

CATALOGUE = {
    "BOL-0001": Item("BOL-0001", "hex bolts M6", 10, "01-03-1"),
    "NUT-0420": Item("NUT-0420", "nuts M6", 50, "02-05-2"),
    "WSH-0007": Item("WSH-0007", "washers M6", 100, "01-09-1"),
}


class CatalogueTest(unittest.TestCase):
    def test_sku(self):
        self.assertEqual(parse_sku("BOL-0001"), ("BOL", 1))
        with self.assertRaises(ValueError):
            Item("bolt", "no code")

    def test_packs(self):
        self.assertEqual(packs_for(21, 10), 3)
        self.assertEqual(packs_for(0, 10), 0)
        self.assertEqual(units_in(3, 10), 30)

    def test_locations_walk_in_a_serpentine(self):
        self.assertEqual(parse_location("03-12-2"), (3, 12, 2))
        codes = ["02-01-1", "01-09-1", "02-07-1", "01-02-1"]
        self.assertEqual(sorted(codes, key=walk_key), ["01-02-1", "01-09-1", "02-07-1", "02-01-1"])

    def test_pick_list_in_walking_order(self):
        order = Order("SO-1")
        order.add("NUT-0420", 100)
        order.add("BOL-0001", 20)
        order.add("WSH-0007", 5)
        order.add("BOL-0001", 10)
        self.assertEqual(
            pick_list(order, CATALOGUE),
            [("01-03-1", "BOL-0001", 30), ("01-09-1", "WSH-0007", 5), ("02-05-2", "NUT-0420", 100)],
        )


if __name__ == "__main__":
    unittest.main()

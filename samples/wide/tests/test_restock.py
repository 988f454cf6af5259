import unittest
from datetime import date

from depot.items import Item
from depot.restock import reorder_point, reorder_quantity
from depot.stock import StockLedger
from depot.suppliers import Supplier, supplier_for
from depot.weeks import last_weeks

TODAY = date(2025, 3, 12)
BOLTS = Item("BOL-0001", "hex bolts M6", pack_size=10)
SUPPLIERS = [Supplier("Fastco", ("BOL", "NUT"), lead_time_weeks=2)]


def ledger_with(weekly):
    ledger = StockLedger()
    ledger.receive(BOLTS.sku, 200, "2025-W01")
    for week, quantity in zip(last_weeks(TODAY, len(weekly)), weekly):
        ledger.ship(BOLTS.sku, quantity, week)
    return ledger


class RestockTest(unittest.TestCase):
    def test_supplier_by_family(self):
        self.assertEqual(supplier_for("NUT-0420", SUPPLIERS).name, "Fastco")
        with self.assertRaises(LookupError):
            supplier_for("SCR-0001", SUPPLIERS)

    def test_reorder_point_covers_lead_time_and_safety(self):
        ledger = ledger_with([5, 6, 6, 8])  # 6.25 a week, three weeks
        self.assertEqual(reorder_point(ledger, BOLTS, SUPPLIERS[0], TODAY), 19)

    def test_nothing_to_order_above_the_point(self):
        ledger = ledger_with([5, 6, 6, 8])
        self.assertEqual(reorder_quantity(ledger, BOLTS, SUPPLIERS[0], TODAY), 0)

    def test_order_whole_packs(self):
        ledger = ledger_with([40, 45, 50, 44])  # 179 shipped, 21 on hand, 44.75 a week
        self.assertEqual(reorder_point(ledger, BOLTS, SUPPLIERS[0], TODAY), 135)
        self.assertEqual(reorder_quantity(ledger, BOLTS, SUPPLIERS[0], TODAY), 120)


if __name__ == "__main__":
    unittest.main()

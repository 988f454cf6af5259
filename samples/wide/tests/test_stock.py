import unittest
from datetime import date

from depot.items import Item
from depot.reports import stock_report
from depot.stock import StockLedger
from depot.valuation import stock_value
from depot.weeks import last_weeks, monday_of, week_key, weekly_totals


class StockTest(unittest.TestCase):
    def test_on_hand_and_shipments(self):
        ledger = StockLedger()
        ledger.receive("BOL-0001", 30, "2025-W01")
        ledger.ship("BOL-0001", 12, "2025-W02")
        self.assertEqual(ledger.on_hand("BOL-0001"), 18)
        self.assertEqual(ledger.shipments("BOL-0001"), [("2025-W02", 12)])
        with self.assertRaises(ValueError):
            ledger.ship("BOL-0001", 19, "2025-W02")

    def test_weeks(self):
        today = date(2025, 3, 12)
        self.assertEqual(week_key(today), "2025-W11")
        self.assertEqual(last_weeks(today, 2), ["2025-W09", "2025-W10"])
        self.assertEqual(monday_of(today), date(2025, 3, 10))
        self.assertEqual(weekly_totals([("2025-W10", 4), ("2025-W10", 1)], ["2025-W09", "2025-W10"]), [0, 5])

    def test_value_and_report(self):
        ledger = StockLedger()
        ledger.receive("BOL-0001", 30, "2025-W01")
        catalogue = {"BOL-0001": Item("BOL-0001", "hex bolts M6", 10, unit_cost=0.25)}
        self.assertEqual(stock_value(ledger, catalogue), 7.5)
        report = stock_report(ledger, catalogue, date(2025, 3, 12))
        self.assertIn("BOL-0001", report)
        self.assertIn("hex bolts M6", report)


if __name__ == "__main__":
    unittest.main()

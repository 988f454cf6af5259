import unittest
from datetime import date

from depot.forecast import weekly_forecast
from depot.smoothing import mean_demand, peak_demand
from depot.stock import StockLedger
from depot.weeks import last_weeks

TODAY = date(2025, 3, 12)


class SmoothingTest(unittest.TestCase):
    def test_mean_of_a_window(self):
        self.assertEqual(mean_demand([3, 4]), 3.5)

    def test_mean_of_nothing(self):
        self.assertEqual(mean_demand([]), 0.0)

    def test_peak(self):
        self.assertEqual(peak_demand([2, 9, 4]), 9)


class ForecastTest(unittest.TestCase):
    def test_mean_of_the_last_four_weeks(self):
        ledger = StockLedger()
        ledger.receive("BOL-0001", 100, "2025-W01")
        for week, quantity in zip(last_weeks(TODAY, 4), [5, 6, 6, 8]):
            ledger.ship("BOL-0001", quantity, week)
        self.assertEqual(weekly_forecast(ledger, "BOL-0001", TODAY), 6.25)

    def test_weeks_without_shipments_count_as_zero(self):
        ledger = StockLedger()
        ledger.receive("BOL-0001", 100, "2025-W01")
        ledger.ship("BOL-0001", 6, last_weeks(TODAY, 4)[-1])
        self.assertEqual(weekly_forecast(ledger, "BOL-0001", TODAY), 1.5)


if __name__ == "__main__":
    unittest.main()

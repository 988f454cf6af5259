"""Weekly demand forecast per item, from the shipments of recent weeks."""

from depot.smoothing import mean_demand
from depot.weeks import last_weeks, weekly_totals

FORECAST_WEEKS = 4


def weekly_forecast(ledger, sku, today, weeks=FORECAST_WEEKS):
    """Expected quantity of `sku` shipped per week: the mean of the last `weeks` weeks."""
    keys = last_weeks(today, weeks)
    return mean_demand(weekly_totals(ledger.shipments(sku), keys))

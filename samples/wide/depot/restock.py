"""Reorders: when an item's stock runs low, and how many packs to order."""

import math

from depot.forecast import weekly_forecast
from depot.units import packs_for, units_in

SAFETY_WEEKS = 1


def reorder_point(ledger, item, supplier, today):
    """Stock level at which to reorder: forecast demand over the lead time plus safety stock."""
    demand = weekly_forecast(ledger, item.sku, today)
    return math.ceil(demand * (supplier.lead_time_weeks + SAFETY_WEEKS))


def reorder_quantity(ledger, item, supplier, today):
    """Units to order now (whole packs), or 0 when stock on hand is above the reorder point."""
    point = reorder_point(ledger, item, supplier, today)
    on_hand = ledger.on_hand(item.sku)
    if on_hand > point:
        return 0
    return units_in(packs_for(point - on_hand, item.pack_size), item.pack_size)

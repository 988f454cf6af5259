"""depot: stock levels, weekly demand forecasts and reorders for a small warehouse."""

from depot.forecast import weekly_forecast
from depot.items import Item
from depot.restock import reorder_quantity
from depot.stock import StockLedger

__all__ = ["Item", "StockLedger", "reorder_quantity", "weekly_forecast"]

"""A plain-text stock report: one row per item with stock on hand and weekly forecast."""

from depot.forecast import weekly_forecast


def stock_report(ledger, catalogue, today):
    rows = ["sku       on_hand  forecast/week  name"]
    for sku in ledger.items():
        item = catalogue[sku]
        forecast = weekly_forecast(ledger, sku, today)
        rows.append(f"{sku:<9} {ledger.on_hand(sku):>7}  {forecast:>13.2f}  {item.name}")
    return "\n".join(rows)

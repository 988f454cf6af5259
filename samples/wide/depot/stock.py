"""The stock ledger of the depot: receipts and shipments per item."""

from collections import defaultdict


class StockLedger:
    def __init__(self):
        self._moves = defaultdict(list)  # sku -> [(week_key, quantity)]; shipments negative

    def receive(self, sku, quantity, week):
        if quantity <= 0:
            raise ValueError("a receipt brings a positive quantity")
        self._moves[sku].append((week, quantity))

    def ship(self, sku, quantity, week):
        if quantity <= 0:
            raise ValueError("a shipment takes a positive quantity")
        if quantity > self.on_hand(sku):
            raise ValueError(f"not enough stock of {sku} to ship {quantity}")
        self._moves[sku].append((week, -quantity))

    def on_hand(self, sku):
        return sum(q for _, q in self._moves[sku])

    def shipments(self, sku):
        """(week, quantity shipped) of every shipment of `sku`, oldest first."""
        return [(week, -q) for week, q in self._moves[sku] if q < 0]

    def items(self):
        return sorted(self._moves)

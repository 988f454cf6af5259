"""Items of the depot catalogue."""

from dataclasses import dataclass

from depot.skus import parse_sku


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    pack_size: int = 1
    location: str = "01-01-1"
    unit_cost: float = 0.0

    def __post_init__(self):
        parse_sku(self.sku)
        if self.pack_size < 1:
            raise ValueError(f"item {self.sku}: pack_size must be at least one")

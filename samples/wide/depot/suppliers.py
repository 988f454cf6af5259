"""Suppliers of the depot and their lead times."""

from dataclasses import dataclass

from depot.skus import family


@dataclass(frozen=True)
class Supplier:
    name: str
    families: tuple
    lead_time_weeks: int = 1


def supplier_for(sku, suppliers):
    """The first supplier serving the SKU's family."""
    for supplier in suppliers:
        if family(sku) in supplier.families:
            return supplier
    raise LookupError(f"no supplier serves {sku}")

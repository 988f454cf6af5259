"""What the shop sells: price (pence, before VAT), parcel weight and VAT band per SKU."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    price: int
    grams: int
    vat_band: str  # "standard" or "zero" (food)


CATALOG = {
    p.sku: p
    for p in (
        Product("TEA-0001", "Breakfast tea, 80 bags", 350, 260, "zero"),
        Product("BIS-0001", "Shortbread tin", 675, 450, "zero"),
        Product("MUG-0001", "Enamel mug", 899, 300, "standard"),
        Product("CAD-0001", "Tea caddy", 1299, 400, "standard"),
        Product("POT-0001", "Teapot, 1 litre", 2450, 900, "standard"),
    )
}


def product(sku):
    """The product of a SKU. Raises LookupError for one the shop does not sell."""
    try:
        return CATALOG[sku]
    except KeyError:
        raise LookupError(f"unknown SKU {sku!r}") from None

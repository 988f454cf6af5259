"""VAT: 20% on standard-rated goods after their share of the discount; food is zero-rated."""

from tillbook.catalog import product
from tillbook.lines import calc_total
from tillbook.money import share

VAT_PERCENT = 20


def vat(lines, discount=0):
    """VAT in pence. A discount is spread over all lines pro rata to their amounts, so only the
    standard-rated lines' share of it lowers the VAT."""
    goods = calc_total(lines)
    if goods == 0:
        return 0
    standard = calc_total([line for line in lines if product(line.sku).vat_band == "standard"])
    taxable = standard - share(discount, standard, goods)
    return share(taxable, VAT_PERCENT, 100)

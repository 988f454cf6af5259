"""Pick lists: the lines of an order in the order a picker walks the shelves."""

from depot.locations import walk_key


def pick_list(order, catalogue):
    """[(location, sku, quantity)] for every item of `order`, in walking order."""
    rows = []
    for sku in order.skus():
        item = catalogue[sku]
        rows.append((item.location, sku, order.quantity_of(sku)))
    rows.sort(key=lambda row: (walk_key(row[0]), row[1]))
    return rows

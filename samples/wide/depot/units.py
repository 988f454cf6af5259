"""Pack sizes: items are stored and ordered in whole packs."""


def packs_for(units, pack_size):
    """The number of whole packs that hold at least `units` units."""
    if pack_size <= 0:
        raise ValueError("pack_size must be positive")
    if units <= 0:
        return 0
    return -(-units // pack_size)


def units_in(packs, pack_size):
    """Units held by `packs` whole packs."""
    return packs * pack_size

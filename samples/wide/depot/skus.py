"""SKU codes of depot items: three capital letters, a dash, four digits."""

import re

SKU_RE = re.compile(r"^([A-Z]{3})-(\d{4})$")


def parse_sku(code):
    """(family, number) of a SKU code; ValueError for a malformed one."""
    m = SKU_RE.match(code)
    if not m:
        raise ValueError(f"malformed SKU {code!r}: expected AAA-0000")
    return m.group(1), int(m.group(2))


def family(code):
    return parse_sku(code)[0]

"""Shelf locations `aisle-bay-level` and the order a picker walks them in."""


def parse_location(code):
    """(aisle, bay, level) of a location code such as `03-12-2`."""
    parts = code.split("-")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"malformed location {code!r}")
    aisle, bay, level = (int(p) for p in parts)
    return aisle, bay, level


def walk_key(code):
    """Sort key of the serpentine walk: odd aisles up the bays, even aisles down."""
    aisle, bay, level = parse_location(code)
    return (aisle, bay if aisle % 2 else -bay, level)

"""Money as whole pence: parsing "12.34", formatting "£12.34", and a share rounded half up."""


def pence(text):
    """'12.34' -> 1234, '7' -> 700, '-1.5' -> -150. Raises ValueError on more than two decimals."""
    text = text.strip()
    sign = -1 if text.startswith("-") else 1
    whole, _, frac = text.lstrip("+-").partition(".")
    if len(frac) > 2:
        raise ValueError(f"{text!r} has more than two decimals")
    return sign * (int(whole or "0") * 100 + int(frac.ljust(2, "0")))


def fmt(amount):
    """1234 -> '£12.34', -150 -> '-£1.50'."""
    sign = "-" if amount < 0 else ""
    return f"{sign}£{abs(amount) // 100}.{abs(amount) % 100:02d}"


def share(amount, numerator, denominator):
    """amount * numerator / denominator in whole pence, rounded half up (amount >= 0)."""
    return (2 * amount * numerator + denominator) // (2 * denominator)

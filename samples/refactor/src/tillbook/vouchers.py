"""Vouchers: a fixed amount off once the goods reach the voucher's minimum spend."""

from dataclasses import dataclass

from tillbook.lines import calc_total


class VoucherRefused(ValueError):
    pass


@dataclass(frozen=True)
class Voucher:
    code: str
    amount_off: int
    min_spend: int


def redeem(voucher, lines):
    """The pence the voucher takes off these lines (never more than the goods cost).
    Raises VoucherRefused below the minimum spend."""
    goods = calc_total(lines)
    if goods < voucher.min_spend:
        raise VoucherRefused(f"voucher {voucher.code} needs goods of at least {voucher.min_spend} pence")
    return min(voucher.amount_off, goods)

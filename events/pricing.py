"""Money is satangs everywhere; these turn it into the strings the spec shows (CONTRACT §1)."""


def satangs_to_decimal_string(satangs: int) -> str:
    """150000 → "1500.00"."""
    sign = "-" if satangs < 0 else ""
    baht, satang = divmod(abs(satangs), 100)
    return f"{sign}{baht}.{satang:02d}"


def format_baht(satangs: int) -> str:
    """150000 → "฿1,500.00"."""
    baht, satang = divmod(satangs, 100)
    return f"฿{baht:,}.{satang:02d}"


def price_label(
    *, price: int, ticket_type_kind: str, pack_size: int | None, ticket_kind: str
) -> str:
    if ticket_kind == "complimentary":
        return "Complimentary"
    if price == 0:
        return "Free"
    if ticket_type_kind == "pack" and pack_size:
        return f"{format_baht(price)} / {pack_size} tickets"
    return format_baht(price)

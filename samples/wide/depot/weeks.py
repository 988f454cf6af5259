"""Week keys (ISO year and week) and weekly buckets of shipped quantities."""

from datetime import timedelta


def week_key(day):
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def last_weeks(today, count):
    """The keys of the `count` weeks before the week of `today`, oldest first."""
    keys = []
    for back in range(count, 0, -1):
        keys.append(week_key(today - timedelta(weeks=back)))
    return keys


def weekly_totals(shipments, weeks):
    """Quantity shipped in each of `weeks` (zero for a week without shipments)."""
    totals = dict.fromkeys(weeks, 0)
    for week, quantity in shipments:
        if week in totals:
            totals[week] += quantity
    return [totals[w] for w in weeks]


def monday_of(day):
    return day - timedelta(days=day.weekday())


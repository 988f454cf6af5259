"""The retry ceiling after a provider overflow uses the provider's own numbers when it gives them."""

from longrun.activities.model import retry_ceiling


def test_scales_by_the_providers_ratio():
    # we thought we sent 100k; the provider counted 210k against a 200k window
    assert retry_ceiling("prompt is too long: 210000 tokens > 200000 maximum", 100_000) == int(100_000 * 200 / 210 * 0.9)


def test_without_numbers_aims_at_80_percent_and_never_below_100():
    assert retry_ceiling("model_context_window_exceeded", 10_000) == 8_000
    assert retry_ceiling("prompt is too long", 50) == 100
    assert retry_ceiling("prompt is too long", 0) is None


def test_the_providers_ceiling_has_no_margin_and_never_exceeds_what_was_sent():
    from longrun.activities.model import provider_ceiling

    assert provider_ceiling("prompt is too long: 210000 tokens > 200000 maximum", 100_000) == int(100_000 * 200 / 210)
    assert provider_ceiling("prompt is too long", 10_000) == 9_999
    assert provider_ceiling("prompt is too long", 0) is None
    aim = retry_ceiling("prompt is too long: 5608 tokens > 5381 maximum", 4_595)
    most = provider_ceiling("prompt is too long: 5608 tokens > 5381 maximum", 4_595)
    assert aim is not None and most is not None and aim < most < 4_595

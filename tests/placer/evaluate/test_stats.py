import math

from placer.evaluate.stats import per_hour, plus_minus


def test_a_rate_per_hour_keeps_one_decimal_from_one_an_hour_and_three_below():
    assert per_hour(181.25, 2.04) == "181.2 ± 2.0"
    assert per_hour(0.0455, math.nan) == "0.045 ± n/a"  # a trace's weeks-long window: one decimal would print 0.0
    assert per_hour(0.0, 0.0) == "0.0 ± 0.0"
    assert plus_minus(0.1824, 0.0213) == "0.182 ± 0.021"

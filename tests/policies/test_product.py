"""What a recipe ships (``placer.policies.product``): the choice between its student and its RL winner, and the verdict."""

import math

import numpy as np
import pytest

from placer.policies.product import Validated, choose_product, verdict
from placer.policies.validation import RegimeRow, pooled_row


def _row(difference: float, half: float, learned: float = 0.2, regime: str = "r") -> RegimeRow:
    return RegimeRow(regime=regime, streams=4, learned=learned, reference=learned + difference, difference=difference, half=half)


def _validated(rows: list[RegimeRow], pooled: RegimeRow) -> Validated:
    return Validated(policy="p.pt", regimes=rows, pooled=pooled)


def test_the_pooled_row_pairs_every_stream_at_once():
    learned, reference = np.array([0.1, 0.2, 0.3, 0.2]), np.array([0.2, 0.2, 0.4, 0.3])
    row = pooled_row(learned, reference)
    assert (row.regime, row.streams) == ("pooled", 4)
    assert row.learned == pytest.approx(0.2) and row.reference == pytest.approx(0.275) and row.difference == pytest.approx(0.075)
    assert row.half == pytest.approx(3.182 * 0.05 / 2)  # t(0.975, 3) x sd of (0.1, 0, 0.1, 0.1) / sqrt(4)
    assert math.isnan(pooled_row(learned[:1], reference[:1]).half)
    with pytest.raises(ValueError, match="streams"):
        pooled_row(learned, reference[:3])


def test_the_product_is_no_worse_than_best_anywhere_first_then_blocks_least():
    level, worse = _row(0.0, 0.01), _row(-0.05, 0.01)
    student = _validated([level, level], _row(0.01, 0.005, learned=0.30))
    winner = _validated([level, level], _row(0.02, 0.005, learned=0.29))
    assert choose_product({"student": student, "rl-winner": winner}) == "rl-winner"  # blocks less pooled
    behind = _validated([level, worse], _row(0.03, 0.005, learned=0.28))  # less pooled, but worse than best in a regime
    assert choose_product({"student": student, "rl-winner": behind}) == "student"
    assert choose_product({"student": student, "rl-winner": student}) == "student"  # equals: the student
    assert choose_product({"student": behind, "rl-winner": behind.model_copy(update={"policy": "q.pt"})}) == "student"


def test_the_verdict_serves_learning_only_where_it_paid_pooled_and_lost_nowhere():
    table = {"members": {"a": "lean", "b": "lean:admit=0.9", "c": "lean:admit=0.9", "d": "learned"}}
    served = ("learned", "placer serve --cluster my.toml --policy-file PATH")
    level, better, worse = _row(0.0, 0.01), _row(0.02, 0.01), _row(-0.05, 0.01)
    assert verdict(_validated([better, level], _row(0.01, 0.004)), table, ["my.toml"]) == served
    # one regime resolved better among many is not enough: pooled, the lead must be resolved
    assert verdict(_validated([better, level], _row(0.01, 0.02)), table, ["my.toml"])[0] == "lean:admit=0.9"
    assert verdict(_validated([level], _row(0.0, 0.01)), table, ["my.toml"])[0] == "lean:admit=0.9"  # level: the heuristic, simpler
    assert verdict(_validated([better, worse], _row(0.03, 0.01)), table, ["my.toml"]) == (
        "lean:admit=0.9",
        "placer serve --cluster my.toml --heuristic lean:admit=0.9",
    )  # ahead pooled, behind somewhere: not served
    # trained on two clusters: a line that runs as pasted (one cluster; the other named in a shell comment)
    assert verdict(_validated([better], _row(0.02, 0.01)), table, ["dgx8x8", "mixed"])[1] == (
        "placer serve --cluster dgx8x8 --policy-file PATH  # trained for dgx8x8, mixed: one service per cluster"
    )
    assert verdict(_validated([better], _row(0.02, 0.01)), None, ["my.toml"])[0] == "learned"
    assert verdict(_validated([worse], _row(-0.02, 0.01)), None, ["my.toml"])[0] == "best"  # no table: best itself


def test_the_verdict_weighs_the_shipped_policy_on_the_same_streams():
    table = {"members": {"a": "lean"}}
    level, worse = _row(0.0, 0.01), _row(-0.05, 0.01)
    ours = _validated([level], _row(0.02, 0.01, learned=0.20))
    shipped = Validated(policy="data/policies/placer.pt", regimes=[level], pooled=_row(0.03, 0.01, learned=0.19))
    assert verdict(ours, table, ["my.toml"], shipped) == ("shipped", "placer serve --cluster my.toml --policy-file data/policies/placer.pt")
    level_shipped = shipped.model_copy(update={"pooled": _row(0.02, 0.01, learned=0.20)})
    assert verdict(ours, table, ["my.toml"], level_shipped)[0] == "learned"  # equal rates: this run's, made for the cluster
    behind = shipped.model_copy(update={"regimes": [worse]})  # less pooled, but worse than best in a regime: not served
    assert verdict(ours, table, ["my.toml"], behind)[0] == "learned"
    unresolved = _validated([level], _row(0.01, 0.02))
    assert verdict(unresolved, table, ["my.toml"], shipped)[0] == "shipped"  # the shipped one pays where this run's did not
    assert verdict(unresolved, table, ["my.toml"], behind)[0] == "lean"
    assert verdict(unresolved, table, ["my.toml"], None)[0] == "lean"  # it could not decide on these streams


def test_why_learning_did_not_pay_says_what_more_streams_would_settle():
    from placer.policies.product import verdict_reason, why_not

    level, worse = _row(0.0, 0.01), _row(-0.05, 0.01)
    unresolved = _validated([level], _row(0.01, 0.02, learned=0.3))  # 4 streams; the interval twice the lead: 4 x 2^2
    assert why_not(unresolved) == (
        "the policy's lead over best, +0.0100 ± 0.0200 over 4 streams, is not resolved;"
        " about 16 streams would resolve a lead that size ([recipe] validation_episodes)"
    )
    assert why_not(_validated([level, worse], _row(0.03, 0.01))) == "the policy blocks more than best in 1 regime(s)"
    assert why_not(_validated([level], _row(-0.01, 0.005, learned=0.3)), "this run") == (
        "this run blocks no fewer jobs than best pooled (0.3000 against 0.2900)"
    )
    assert verdict_reason("learned", unresolved, None) == ""
    assert verdict_reason("lean", unresolved, None).startswith(" (learning did not pay here: this run's lead over best")
    assert verdict_reason("lean", unresolved, _validated([worse], _row(-0.05, 0.01))).endswith(
        "; the shipped policy blocks more than best in 1 regime(s))"
    )

"""The environment's configuration refuses what it cannot run in one line, as an :class:`EnvConfigError` (a PlacerError)."""

import re

import pytest

from placer.cluster.placement import PLACEMENT_RULES
from placer.common.errors import ConfigError, EnvConfigError, PlacerError
from placer.envs.config import EnvConfig


def test_the_rules_are_the_placement_rules_in_their_order():
    assert EnvConfig().rules == tuple(PLACEMENT_RULES) == ("first_fit", "best_fit", "spread")
    assert EnvConfig(rules="spread").rules == ("spread",)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rules": ("first_fit", "packed")}, "rules: unknown placement rule 'packed' (rules: first_fit, best_fit, spread)"),
        ({"reward": "money"}, "unknown reward 'money'"),
        ({"strategy": "bogus"}, "strategy: unknown cost-model strategy 'bogus' (strategies: auto, dp, tp, pp, sipml)"),
        ({"baseline": {}}, "baseline: the table names no regime"),
        ({"advisers": 3}, "advisers: 3 is not a list of heuristics' names"),
        ({"settings": ({"max_degree": 4},)}, "settings: max_degree cannot vary by setting"),
        ({"settings": ({"loads": (-1.0,)},)}, "settings: {'loads': (-1.0,)}: loads.0: "),
    ],
)
def test_a_bad_config_is_one_line_of_env_config_error(fields, message):
    with pytest.raises(EnvConfigError, match=re.escape(message)) as caught:
        EnvConfig(**fields)
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, PlacerError)  # caught where any is
    assert "\n" not in str(caught.value)

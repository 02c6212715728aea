"""The typed regime: its key and :meth:`Regime.parse` are exact inverses, and a table with a bad key is refused where it is read."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.common.errors import EnvConfigError
from placer.envs.config import EnvConfig
from placer.envs.regime import POOLED, Regime, parse_table
from placer.policies.teachers import Teachers

SPEC = st.text(alphabet=st.characters(blacklist_characters="|", blacklist_categories=("Cs",)), min_size=1, max_size=12)
LOAD = st.one_of(st.none(), st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False))


@given(cluster=SPEC, load=LOAD, beta=SPEC, queue=SPEC, size=SPEC, structure=SPEC)
def test_a_regimes_key_parses_back_to_the_same_regime(cluster, load, beta, queue, size, structure):
    regime = Regime(cluster, load, beta, queue, size, structure)
    assert Regime.parse(regime.key) == regime and Regime.parse(regime.key).key == regime.key


def test_the_key_is_written_as_reset_info_names_the_fields():
    info = {"cluster": "dgx8x8", "load": 0.9, "beta_dist": "C", "queue": "edf-bf:32", "size": "const", "structure": "iid", "x": 1}
    regime = Regime.from_info(info)
    assert regime.key == "dgx8x8|0.9|C|edf-bf:32|const|iid"
    assert regime.as_info() == {k: v for k, v in info.items() if k != "x"}
    assert regime.pooled(["beta_dist", "load"]).key == "dgx8x8|*|*|edf-bf:32|const|iid"
    assert str(regime.pooled(["beta_dist"])) == "dgx8x8, load 0.9, iid, queue edf-bf:32, size const"


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("dgx8x8|0.9|C|edf-bf:32|const", "is not cluster|load|beta_dist|queue|size|structure"),
        ("dgx8x8|high|C|none|const|iid", "load 'high' is not a number"),
        ("dgx8x8|1|C|none|const|iid", "is written 'dgx8x8|1.0|C|none|const|iid'"),
        ("dgx8x8|-1.0|C|none|const|iid", "is not a positive number"),
        ("dgx8x8|0.9||none|const|iid", "beta_dist '' is not a non-empty spec"),
    ],
)
def test_a_key_that_is_not_one_is_one_line_naming_the_problem(key, problem):
    with pytest.raises(EnvConfigError, match="^regime .*" + problem.replace("|", r"\|").replace("(", r"\(")):
        Regime.parse(key)


def test_tables_with_a_bad_key_are_refused_where_they_are_read():
    with pytest.raises(EnvConfigError, match="^baseline: regime 'dgx8x8|0.9' is not"):
        EnvConfig(clusters=("dgx8x8",), baseline={"dgx8x8|0.9": "lean"})
    with pytest.raises(EnvConfigError, match="^the teacher's table: regime"):
        Teachers("best", 16, {"dgx8x8|1|C|none|const|iid": "lean"})
    good = Regime("dgx8x8", 1.0, "C", "none", "const", "iid")
    assert parse_table({good.key: "lean"}, "t") == {good: "lean"} and POOLED == "*"

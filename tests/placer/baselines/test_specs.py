"""Policy names: one parser with an exact inverse, and one-line refusals that name what is valid."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.baselines.policy import Policy
from placer.baselines.registry import PolicyContext, make_heuristic, make_policy
from placer.baselines.specs import HEURISTIC_KINDS, PolicySpec, kind_usage
from placer.common.errors import PolicyError
from placer.sim.queueing import QueueConfig
from tests.placer.toys import toy_cluster

_ARGS = {
    "para_max": st.just([]),
    "fixed": st.integers(1, 16).map(lambda k: [(None, str(k))]),
    "lean": st.lists(st.sampled_from([("cap", "4"), ("admit", "0.9"), ("admit", "auto"), ("free", "0.25")]), max_size=1),
    "lookahead": st.lists(st.sampled_from([("k", "2"), ("h", "8"), ("m", "0.5")]), max_size=1),
}


@st.composite
def specs(draw) -> str:
    kind = draw(st.sampled_from(sorted(_ARGS)))
    args = "".join(f":{text}" if key is None else f":{key}={text}" for key, text in draw(_ARGS[kind]))
    rule = draw(st.sampled_from(["", "+first_fit", "+best_fit", "+spread"]))
    discipline = draw(st.sampled_from(["", "@fifo", "@edf-bf", "@sjf"]))
    label = draw(st.sampled_from(["", "=mine", "=v2.1_b-3"]))
    return f"{kind}{label}{args}{rule}{discipline}"


@given(specs())
def test_str_is_the_exact_inverse_of_parse(text):
    spec = PolicySpec.parse(text, plugins={})
    assert str(spec) == text and PolicySpec.parse(str(spec), plugins={}) == spec
    assert spec.name == (spec.label or text) and "=" not in str(spec.unlabelled).split(":")[0]
    policy = make_heuristic(spec.unlabelled)
    assert policy.name == str(spec.unlabelled) and policy.spec == spec.unlabelled


def test_a_label_names_a_policy_file_of_ones_own():
    spec = PolicySpec.parse("learned=mine:runs/a/policy.pt", plugins={"learned": None})
    assert (spec.kind, spec.label, spec.positional, spec.name) == ("learned", "mine", "runs/a/policy.pt", "mine")
    assert str(spec) == "learned=mine:runs/a/policy.pt" and str(spec.unlabelled) == "learned:runs/a/policy.pt"
    assert PolicySpec.parse("learned=mine:a.pt:below=1.1+spread", plugins={"learned": None}).args == ((None, "a.pt"), ("below", "1.1"))
    assert PolicySpec.parse("learned:pacml", plugins={"learned": None}).name == "learned:pacml"  # unlabelled: named as written
    from placer.baselines.specs import names_a_file

    assert [names_a_file(t) for t in ("runs/a/policy.pt", "mine.pt", "pacml", "default")] == [True, True, False, False]


def test_parts_are_typed():
    spec = PolicySpec.parse("lookahead:admit=0.9:k=12:h=24:m=0.25+best_fit@edf-bf", plugins={})
    assert (spec.kind, spec.rule, spec.discipline) == ("lookahead", "best_fit", "edf-bf")
    assert spec.options == {"admit": 0.9, "k": 12, "h": 24, "m": 0.25}
    assert PolicySpec.parse("fixed:8", plugins={}).positional == "8"
    assert (PolicySpec.parse("fixed:08", plugins={}).value, PolicySpec.parse("eff:.7", plugins={}).value) == (8, 0.7)
    assert PolicySpec.parse("lean", plugins={}).value is None and PolicySpec.parse("learned:x", plugins={"learned": None}).value is None
    assert spec.queue(QueueConfig(8, "fifo", False)) == QueueConfig(8, "edf", True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lean:admit=2", "unknown policy 'lean:admit=2': use lean:cap=K:admit=Q:free=F"),
        ("best:x=1", "unknown policy 'best:x=1': best takes no arguments"),
        ("lean:admit=0.9:admit=0.8", "unknown policy"),
        ("fixed", "unknown policy 'fixed'"),
        ("fixed:8:9", "unknown policy"),
        ("nope", "unknown policy 'nope'"),
        ("lean+worst_fit", "unknown placement rule 'worst_fit'"),
        ("lean@lifo", "bad queue discipline 'lifo'"),
        ("lean::cap=2", "malformed policy name"),
        ("Lean", "malformed policy name"),
        ("lookahead:admit=best", "unknown policy"),
        ("fixed:1_6", "unknown policy"),  # Python's int and float take underscores (16), signs, spaces, inf
        ("switch:-0", "unknown policy"),
        ("eff: 0.5", "unknown policy"),
        ("hindsight:m=inf", "unknown policy"),
        ("lookahead:m=1e400", "unknown policy"),  # a plain decimal, but inf as a float
        ("lean=best", "label 'best' in 'lean=best' is the name of a policy"),
        ("lean=a b", "bad label 'a b'"),
        ("lean=mine=yours", "malformed policy name"),
    ],
)
def test_bad_names_are_one_line_naming_what_is_valid(text, message):
    with pytest.raises(PolicyError, match=message) as info:
        PolicySpec.parse(text, plugins={})
    assert "\n" not in str(info.value)


def test_each_kind_with_arguments_has_its_own_usage_and_the_others_take_none():
    for kind, (keys, positional) in HEURISTIC_KINDS.items():
        usage = kind_usage(kind)
        if keys or positional:
            assert usage.startswith(f"use {kind}:") and all(f"{key}" in usage for key in keys), kind
        else:
            assert usage == f"{kind} takes no arguments"


def test_plugins_are_names_too_and_check_their_own_arguments():
    assert PolicySpec.parse("learned:history+spread", plugins={"learned": None}).positional == "history"
    with pytest.raises(PolicyError, match="plug-ins: learned"):
        PolicySpec.parse("learnt", plugins={"learned": None})


def test_make_policy_builds_heuristics_with_their_declared_hooks():
    policy = make_policy("lean:admit=best@edf", PolicyContext(toy_cluster(1, 2)))
    assert isinstance(policy, Policy) and policy.name == "lean:admit=best@edf"
    assert policy.stats() is None and policy.estimates() == ()  # untuned: nothing to report
    with pytest.raises(PolicyError, match="1 <= K <= 2"):
        make_policy("fixed:3", PolicyContext(toy_cluster(1, 2), max_degree=2))


def test_arguments_are_converted_once_each_or_refused():
    from placer.baselines.specs import positive_finite

    def spec(text):
        return PolicySpec.parse(text, plugins={"learned": None})

    gates = {"below": positive_finite}
    assert spec("learned:default:below=1.5").arguments(gates, str, optional=True) == {None: "default", "below": 1.5}
    assert spec("learned:below=2").arguments(gates, str, optional=True) == {"below": 2.0}
    assert spec("learned:below=2").arguments(gates, str) is None  # the positional one required
    for refused in ("learned:below=1:below=2", "learned:a:b", "learned:below=0", "learned:above=1"):
        assert spec(refused).arguments(gates, str, optional=True) is None

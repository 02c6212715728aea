"""Merging evaluations of the same streams: paired on the seeds they share."""

from __future__ import annotations

import pytest

from placer.common.errors import PlacerError
from placer.evaluate import EvaluationConfig, EvaluationResult, merge_results


def result(policy: str, first_seed: int, seeds: int, jobs: int = 50) -> EvaluationResult:
    config = EvaluationConfig.model_validate(
        {"cluster": "dgx8x8", "policies": [policy], "seeds": seeds, "first_seed": first_seed, "workload": {"jobs": jobs}}
    )
    runs = [{"policy": policy, "seed": seed, "beta_dist": "A"} for seed in range(first_seed, first_seed + seeds)]
    return EvaluationResult(config, runs)


def test_evaluations_merge_on_the_seeds_they_share():
    merged = merge_results([result("lean", 0, 5), result("para_max", 2, 5)])
    assert (merged.config.first_seed, merged.config.seeds, merged.config.policies) == (2, 3, ["lean", "para_max"])
    assert [(r["policy"], r["seed"]) for r in merged.runs] == [
        ("lean", 2),
        ("lean", 3),
        ("lean", 4),
        ("para_max", 2),
        ("para_max", 3),
        ("para_max", 4),
    ]


def test_evaluations_with_no_seed_or_no_stream_in_common_do_not_merge():
    with pytest.raises(PlacerError, match="share no seed"):
        merge_results([result("lean", 0, 3), result("para_max", 100, 3)])
    with pytest.raises(PlacerError, match="different job streams"):
        merge_results([result("lean", 0, 3), result("para_max", 0, 3, jobs=60)])


def test_an_evaluation_never_draws_the_tuning_streams():
    from pydantic import ValidationError

    from placer.baselines.policy import TUNING_SEED

    with pytest.raises(ValidationError, match="draw the tuning streams"):
        result("lean", TUNING_SEED - 1, 2)
    assert result("lean", TUNING_SEED - 2, 2).config.first_seed == TUNING_SEED - 2


def test_a_learned_policy_of_two_policy_files_is_kept_twice_under_labels_with_a_note():
    def learned(policy_file: str | None, blocking: float) -> EvaluationResult:
        config = EvaluationConfig.model_validate(
            {"cluster": "dgx8x8", "policies": ["lean", "learned"], "seeds": 1, "policy_file": policy_file, "workload": {"jobs": 50}}
        )
        runs = [{"policy": p, "seed": 0, "beta_dist": "A", "blocking_rate": b} for p, b in (("lean", 0.5), ("learned", blocking))]
        return EvaluationResult(config, runs)

    merged = merge_results([learned("a/policy.pt", 0.1), learned("b/policy.pt", 0.7)], labels=["a", "b"])
    assert merged.config.policies == ["lean", "learned[a]", "learned[b]"]
    assert [(r["policy"], r["blocking_rate"]) for r in merged.runs] == [("lean", 0.5), ("learned[a]", 0.1), ("learned[b]", 0.7)]
    (note,) = merged.notes
    assert "learned was evaluated with a different policy file in each evaluation" in note and "learned[b] (b/policy.pt)" in note
    same = merge_results([learned("a/policy.pt", 0.1), learned("./a/policy.pt", 0.7)])  # one file: taken from the first, as before
    assert same.config.policies == ["lean", "learned"] and same.notes == [] and [r["blocking_rate"] for r in same.runs] == [0.5, 0.1]
    default = merge_results([learned(None, 0.1), learned("b/policy.pt", 0.7)])  # no file: the shipped one, another policy
    assert default.config.policies == ["lean", "learned[1]", "learned[2]"] and "learned[1] (the shipped default)" in default.notes[0]

"""Several evaluations of the same job streams as one: a new policy paired, seed by seed, with baselines evaluated before.

A name evaluated in several of them is one policy only when it is the same policy in each: the same spec (a label
stands for its spec, :attr:`~placer.evaluate.config.EvaluationConfig.labels`) and, for a policy that reads a file
(``learned``), the same file: by content where every evaluation recorded its sha256, else by path. Otherwise none is
dropped and none hides another: each stays, as ``NAME[LABEL]`` (``LABEL`` the folder of the first evaluation with that
policy), and a note says so (never a silent merge).
"""

from __future__ import annotations

from collections.abc import Sequence

from placer.common.errors import ResultsError
from placer.evaluate.config import EvaluationConfig
from placer.evaluate.identity import file_text, policy_file
from placer.evaluate.results import EvaluationResult

STREAM_FIELDS_IGNORED = {"policies", "labels", "policy_file", "seeds", "first_seed"}  # fields that do not change the job stream of a seed


def merge_results(results: Sequence[EvaluationResult], labels: Sequence[str] | None = None) -> EvaluationResult:
    """One result from evaluations of the same job streams (settings equal but for the policies).

    Lets a new policy be compared, paired by seed, with baselines evaluated earlier. A policy evaluated in several of
    them is taken from the first, unless its name stands for different policies there (module docstring): then each
    stays, as ``NAME[LABEL]`` (``labels``: one per result, e.g. its folder's name; default 1, 2, ...), and a note in
    ``notes`` says so. Seed ``s`` draws the same streams whatever the number of seeds, so evaluations with different
    seeds merge on the seeds they share; their per-job tables and policy files follow their policies.
    """
    labels = list(labels) if labels is not None else [str(i + 1) for i in range(len(results))]
    renames, notes = _distinct_names(results, labels)
    results = [_renamed(result, rename) for result, rename in zip(results, renames, strict=True)]
    first = results[0].config
    keep = _stream_settings(first)
    low = max(result.config.first_seed for result in results)
    high = min(result.config.first_seed + result.config.seeds for result in results)
    if high <= low:
        raise ResultsError("these evaluations share no seed: nothing to pair")
    merged = EvaluationResult(first, notes=notes)
    policies: list[str] = []
    named: dict[str, str] = {}
    for result in results:
        other = _stream_settings(result.config)
        differing = sorted(k for k in keep if keep[k] != other[k])
        if differing:
            raise ResultsError(f"these evaluations drew different job streams (they differ in {', '.join(differing)}): nothing to pair")
        new = [p for p in result.config.policies if p not in policies]
        policies += new
        merged.runs += [r for r in result.runs if r["policy"] in new and low <= r["seed"] < high]
        merged.timelines += [t for t in result.timelines if t["policy"] in new and low <= t["seed"] < high]
        merged.jobs += [table for t in result.jobs if (table := t.narrowed(new, (low, high))).names]
        merged.policy_files |= {p: entry for p, entry in result.policy_files.items() if p in new}
        named |= {p: spec for p, spec in result.config.labels.items() if p in new}
    merged.config = first.model_copy(update={"policies": policies, "seeds": high - low, "first_seed": low, "labels": named})
    return merged


def _distinct_names(results: Sequence[EvaluationResult], labels: list[str]) -> tuple[list[dict[str, str]], list[str]]:
    """Per result, the new name of each of its policies whose name another result gave to another policy (``learned`` ->
    ``learned[b]``, the label of the first result with that policy), and a note per such name."""
    renames: list[dict[str, str]] = [{} for _ in results]
    notes = []
    for name in dict.fromkeys(p for r in results for p in r.config.policies):
        having = [i for i, r in enumerate(results) if name in r.config.policies]
        specs = {i: results[i].config.spec_of(name) for i in having}
        reads = {i for i in having if policy_file(results[i].config, name) is not None}
        hashed = all(name in results[i].policy_files for i in reads)  # else compared by path, as results before hashes
        keys = {i: (specs[i], _file_identity(results[i], name, hashed) if i in reads else None) for i in having}
        if len(set(keys.values())) < 2:
            continue
        label_of = {keys[i]: labels[i] for i in reversed(having)}  # each policy: the label of the first result with it
        for i in having:
            renames[i][name] = f"{name}[{label_of[keys[i]]}]"
        by_spec = len(set(specs.values())) > 1
        shown = ", ".join(
            f"{renames[i][name]} ({_described(results[i], name, by_spec, hashed, i in reads)})"
            for i in having
            if label_of[keys[i]] == labels[i]
        )
        what = "names a different policy" if by_spec else "was evaluated with a different policy file"
        notes.append(f"{name} {what} in each evaluation: reported apart, as {shown}")
    return renames, notes


def _file_identity(result: EvaluationResult, name: str, hashed: bool) -> str:
    """The policy file of ``name`` in ``result``: its sha256 (``hashed``), else its path as given."""
    return result.policy_files[name]["sha256"] if hashed else file_text(result.config, name)


def _described(result: EvaluationResult, name: str, by_spec: bool, hashed: bool, reads: bool) -> str:
    """What the policy ``name`` of ``result`` is, for a note: its spec (when that is what differs), its file (and sha256)."""
    parts = [result.config.spec_of(name)] if by_spec else []
    if reads and not by_spec:
        parts.append(result.policy_files[name]["file"] if hashed else file_text(result.config, name))
    if reads and hashed:
        parts.append(f"sha256 {result.policy_files[name]['sha256'][:12]}")
    return ", ".join(parts)


def _renamed(result: EvaluationResult, rename: dict[str, str]) -> EvaluationResult:
    """``result`` with its policies renamed by ``rename`` (in its config, runs, timelines, per-job tables and files)."""
    if not rename:
        return result

    def name(entries: list[dict]) -> list[dict]:
        return [e | {"policy": rename[e["policy"]]} if e["policy"] in rename else e for e in entries]

    config = result.config
    policies = [rename.get(p, p) for p in config.policies]
    labels = {rename.get(p, p): config.spec_of(p) for p in config.policies if p in config.labels or p in rename}
    return EvaluationResult(
        config.model_copy(update={"policies": policies, "labels": labels}),
        name(result.runs),
        name(result.timelines),
        jobs=[table.renamed(rename) for table in result.jobs],
        policy_files={rename.get(p, p): entry for p, entry in result.policy_files.items()},
    )


def _stream_settings(config: EvaluationConfig) -> dict:
    """The settings that decide an evaluation's job streams, flat (the workload's fields by name)."""
    settings = config.model_dump(exclude=STREAM_FIELDS_IGNORED)
    return {**{k: v for k, v in settings.items() if k != "workload"}, **settings["workload"]}

"""The retired policies the figures evaluate, named by their files.

``learned:NAME`` runs only the shipped policies of ``data/policies`` (installed with placer). A policy that was shipped
once and retired lies in ``experiments/policies/NAME.pt``, a folder of the repository: a figure's command names it by
that file, labelled (``learned=default:experiments/policies/default.pt``, :func:`by_file`), and the figure keeps its
results under the name they were recorded with when such a policy was run by name (``learned:default``,
:func:`recorded_names`), so that a figure made again renders as before.
"""

from __future__ import annotations

import re
from pathlib import Path

RETIRED = Path("experiments/policies")  # relative to the repository's root
ROOT = Path(__file__).resolve().parents[2]
POLICIES = re.compile(r"(--policies )(\S+)")
BY_FILE = re.compile(rf"^learned:{re.escape(RETIRED.as_posix())}/(?P<name>[\w.-]+)\.pt(?P<rest>[:+].*)?$")


def retired_names(root: Path = ROOT) -> set[str]:
    """The names of the retired policies: the files ``experiments/policies/NAME.pt``."""
    return {path.stem for path in (root / RETIRED).glob("*.pt")}


def policy_by_file(text: str, retired: set[str]) -> str:
    """One policy of ``--policies``: ``learned:NAME[:ARGS][+RULE]`` of a retired ``NAME`` ->
    ``learned=LABEL:experiments/policies/NAME.pt[:ARGS][+RULE]`` (LABEL: NAME and the arguments, e.g. ``default-below1.15``);
    any other as it is."""
    if not text.startswith("learned:"):
        return text
    body = text.removeprefix("learned:")
    name, rest = re.match(r"([^:+]*)(.*)", body).groups()  # type: ignore[union-attr]
    if name not in retired:
        return text
    label = name + re.sub(r"[^\w.-]", "", rest.replace(":", "-").replace("+", "-"))
    return f"learned={label}:{RETIRED.as_posix()}/{name}.pt{rest}"


def by_file(command: str, root: Path = ROOT) -> str:
    """A figure's command with each retired policy of its ``--policies`` named by its file (:func:`policy_by_file`)."""
    retired = retired_names(root)
    return POLICIES.sub(lambda m: m[1] + ",".join(policy_by_file(p, retired) for p in m[2].split(",")), command)


def recorded_names(data: dict) -> dict:
    """An evaluation's ``results.json`` with each retired policy named as its results were recorded when it ran by name:
    the label of ``learned:experiments/policies/NAME.pt[ARGS]`` -> ``learned:NAME[ARGS]`` in the config's policies, the
    runs and the record's policy files; its label dropped."""
    config = data["record"]["config"]
    labels = config.get("labels") or {}
    renames = {}
    for label, spec in labels.items():
        if (match := BY_FILE.match(spec)) is not None:
            renames[label] = f"learned:{match['name']}{match['rest'] or ''}"
    if not renames:
        return data
    config["policies"] = [renames.get(name, name) for name in config["policies"]]
    config["labels"] = {label: spec for label, spec in labels.items() if label not in renames}
    for run in data["runs"]:
        run["policy"] = renames.get(run["policy"], run["policy"])
    if isinstance(files := data["record"].get("policy_files"), dict):
        data["record"]["policy_files"] = {renames.get(name, name): entry for name, entry in files.items()}
    return data

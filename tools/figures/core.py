"""Figures that cannot go stale: result files beside each figure, what made them, and the check.

A figure is a markdown block in the README, ``docs/`` or ``experiments/`` delimited by ``<!-- figure: NAME -->``
and ``<!-- /figure -->`` (and any PNG it draws). Its result files live in its folder, :func:`results_dir`
(``docs/results/NAME/``, or ``experiments/results/NAME/`` for a figure only the experiments' log shows), beside
``figure.json``, which records the commands that made them, the git commit and a fingerprint of the cluster presets
(and the cost-model constants of their devices) the figure uses. A figure is stale when that fingerprint differs
from today's presets, or when its block (or a PNG) differs from what its result files render; ``python -m tools.figures
--check`` lists them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from placer.common.atomic import atomic_path, write_atomic
from placer.common.errors import PlacerError
from tools.figures.retired import by_file, recorded_names

RESULTS = Path("docs/results")  # the result folders of the README's and docs/'s figures
LOG = Path("experiments")  # the experiments' log: its figures' result folders are apart from the docs'
LOG_RESULTS = LOG / "results"  # those of the figures only experiments/*.md show
META = "figure.json"
BLOCK = re.compile(r"<!-- figure: (?P<name>[\w.-]+) -->\n(?P<body>.*?)<!-- /figure -->", re.S)
PNG_KEY = "placer-figure-source"


class FigureError(PlacerError):
    """A documented figure cannot be regenerated: an unknown name, no result files, no block to fill, a failed step."""


@dataclass(frozen=True)
class Step:
    """One command of a figure, run from the repository root as documented; ``stdout``: a result file that keeps what it prints.

    A retired policy in its ``--policies`` (``learned:default``) is named by its file, ``experiments/policies/NAME.pt``
    (:func:`tools.figures.retired.by_file`): placer's ``learned:NAME`` runs only the shipped ones."""

    command: str
    stdout: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "command", by_file(self.command))


@dataclass(frozen=True)
class Rendered:
    """What a figure's result files render to: its markdown block and the PNGs it draws (repo path -> drawer)."""

    markdown: str
    images: dict[str, Callable[[Path], None]] = field(default_factory=dict)


@dataclass(frozen=True)
class Figure:
    """A figure: where its block is, the presets it reads, how its result files are made, and how they render.

    ``keep`` maps a result file's name to where the steps leave it (relative to the repository,
    usually under ``runs/figures/NAME``); ``render`` turns the result folder into a :class:`Rendered`;
    ``reads`` names the figures whose result files it reads besides its own.
    """

    name: str
    document: str
    presets: tuple[str, ...]
    steps: tuple[Step, ...]
    render: Callable[[Path], Rendered]
    keep: dict[str, str] = field(default_factory=dict)
    reads: tuple[str, ...] = ()  # the other figures whose result files ``render`` reads (through :func:`beside`)


def fingerprint(presets: Sequence[str]) -> dict[str, str]:
    """Per preset, a hash of its parsed cluster file and the datasheet constants of its device models (comments do not count)."""
    from placer.cluster.devices import DEVICE_MODELS
    from placer.cluster.topology import load_cluster
    from placer.cost.data_parallel import BUCKET_BYTES

    out = {}
    for name in presets:
        spec = load_cluster(name).spec
        models = sorted({t.model or key for key, t in spec.device_types.items()})
        constants = {m: dataclasses.asdict(DEVICE_MODELS[m]) for m in models if m in DEVICE_MODELS}
        dumped = spec.model_dump(mode="json")
        if dumped.get("calibrated") is None:  # where a calibrated file's fit came from: no constant of the cost model
            dumped.pop("calibrated", None)
        canonical = json.dumps({"spec": dumped, "devices": constants, "bucket_bytes": BUCKET_BYTES}, sort_keys=True)
        out[name] = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    return out


def result_folders(figures: Sequence[Figure]) -> dict[str, Path]:
    """Figure name -> its result folder, relative to the repository: ``experiments/results/NAME`` for a figure rendered
    into ``experiments/`` whose files no figure outside it reads, ``docs/results/NAME`` for every other."""
    outside = {name for figure in figures if not _in_log(figure) for name in figure.reads}
    return {f.name: (LOG_RESULTS if _in_log(f) and f.name not in outside else RESULTS) / f.name for f in figures}


def _in_log(figure: Figure) -> bool:
    """Whether the figure is rendered into a document of the experiments' log."""
    return Path(figure.document).parts[0] == LOG.name


def results_dir(name: str, root: Path | None = None, document: str | None = None) -> Path:
    """Where figure ``name`` keeps its result files, relative to the checkout at ``root`` (default: the one holding
    ``tools/``): ``experiments/results/NAME`` when that folder is there, or, for a figure not yet run, when its ``document``
    is in the experiments' log; else ``docs/results/NAME``. Read from the folders themselves, so that the code reading a
    figure's files needs no registry; which figure belongs where is :func:`result_folders`' rule, and a test holds the
    registry's folders to it."""
    root = Path(__file__).resolve().parents[2] if root is None else root
    logged = (root / LOG_RESULTS / name).is_dir()
    if not logged and document is not None and not (root / RESULTS / name).is_dir():
        logged = Path(document).parts[0] == LOG.name
    return (LOG_RESULTS if logged else RESULTS) / name


def beside(folder: Path, name: str) -> Path:
    """The result folder of figure ``name`` in the checkout that holds ``folder``, a figure's result folder."""
    root = folder.parents[2]  # ROOT/docs/results/NAME or ROOT/experiments/results/NAME
    return root / results_dir(name, root)


def source_hash(folder: Path) -> str:
    """A hash of a figure's result files (not its ``figure.json``): what its PNGs are stamped with."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name != META):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def read_meta(root: Path, figure: Figure) -> dict | None:
    path = root / results_dir(figure.name, root, figure.document) / META
    return json.loads(path.read_text()) if path.exists() else None


def blocks(text: str) -> dict[str, str]:
    """The figure blocks of a markdown text, name -> body (between the two markers)."""
    found: dict[str, str] = {}
    for match in BLOCK.finditer(text):
        if match["name"] in found:
            raise FigureError(f"figure {match['name']!r} appears twice")
        found[match["name"]] = match["body"]
    return found


def problems(root: Path, figure: Figure) -> list[str]:
    """Why ``figure`` is stale (empty when it is current)."""
    meta = read_meta(root, figure)
    if meta is None:
        missing = results_dir(figure.name, root, figure.document) / META
        return [f"no result files ({missing} missing): run 'python -m tools.figures {figure.name} --run'"]
    found = []
    now = fingerprint(figure.presets)
    changed = sorted(p for p in figure.presets if meta["fingerprint"].get(p) != now[p])
    if changed:
        found.append(f"preset {', '.join(changed)} changed since its results were made: run 'python -m tools.figures {figure.name} --run'")
    document = root / figure.document
    body = blocks(document.read_text()).get(figure.name) if document.exists() else None
    folder = root / results_dir(figure.name, root, figure.document)
    rendered = figure.render(folder)
    if body is None:
        found.append(f"no '<!-- figure: {figure.name} -->' block in {figure.document}")
    elif body != rendered.markdown:
        rerender = f"python -m tools.figures {figure.name}"
        found.append(f"its block in {figure.document} differs from what its result files render: run '{rerender}'")
    stamp = source_hash(folder)
    for image in rendered.images:
        if png_stamp(root / image) != stamp:
            found.append(f"{image} was not drawn from its current result files: run 'python -m tools.figures {figure.name}'")
    return found


def png_stamp(path: Path) -> str | None:
    """The result-file hash a PNG was stamped with when drawn, or None."""
    if not path.exists():
        return None
    from PIL import Image

    with Image.open(path) as image:
        return image.info.get(PNG_KEY)


def stamp_png(path: Path, stamp: str) -> None:
    """Write the result-file hash into a PNG's text chunk (drawn once, checked without redrawing)."""
    from PIL import Image, PngImagePlugin

    with Image.open(path) as image:
        image.load()
        info = PngImagePlugin.PngInfo()
        info.add_text(PNG_KEY, stamp)
        with atomic_path(path) as tmp:
            image.save(tmp, format="PNG", pnginfo=info)


def render(root: Path, figure: Figure) -> bool:
    """Rewrite the figure's block and PNGs from its result files; True when anything changed."""
    folder = root / results_dir(figure.name, root, figure.document)
    if read_meta(root, figure) is None:
        raise FigureError(f"figure {figure.name!r} has no result files: run 'python -m tools.figures {figure.name} --run'")
    rendered = figure.render(folder)
    document = root / figure.document
    text = document.read_text()
    if figure.name not in blocks(text):
        raise FigureError(f"{figure.document} has no '<!-- figure: {figure.name} -->' block to fill")
    new = BLOCK.sub(lambda m: m[0] if m["name"] != figure.name else _block(figure.name, rendered.markdown), text)
    changed = new != text
    if changed:
        write_atomic(document, new)
    stamp = source_hash(folder)
    for image, draw in rendered.images.items():
        if png_stamp(root / image) != stamp:
            draw(root / image)
            stamp_png(root / image, stamp)
            changed = True
    return changed


def _block(name: str, body: str) -> str:
    return f"<!-- figure: {name} -->\n{body}<!-- /figure -->"


def argv(command: str) -> list[str]:
    """A documented command as this interpreter runs it (``placer`` and ``python`` are this Python)."""
    words = shlex.split(command)
    if words[0] == "placer":
        return [sys.executable, "-m", "placer", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    return words


def run(root: Path, figure: Figure, *, execute: bool = True, commit: str | None = None) -> None:
    """Make the figure's result files: run its steps from ``root`` (unless ``execute`` is off: they ran
    already and left their files), keep the files it names and record how they were made."""
    import os
    import shutil

    folder = root / results_dir(figure.name, root, figure.document)
    staging = folder.with_name(f".{figure.name}.new")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    scratch = root / "runs" / "figures" / figure.name
    scratch.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    for step in figure.steps:
        if execute:
            done = subprocess.run(argv(step.command), cwd=root, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise FigureError(f"figure {figure.name!r}: {step.command!r} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
            if step.stdout:
                (scratch / step.stdout).write_text(done.stdout)
        if step.stdout:
            _keep(scratch / step.stdout, staging / step.stdout)
    for name, source in figure.keep.items():
        _keep(root / source, staging / name)
    meta = {
        "figure": figure.name,
        "commands": [step.command for step in figure.steps],
        "commit": commit or git_commit(root),
        "fingerprint": fingerprint(figure.presets),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    (staging / META).write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)


def _keep(source: Path, target: Path) -> None:
    """Copy a result file; an evaluation's results.json keeps its runs but names a trace by its file name alone, and a
    retired policy by the name its results were recorded with (:func:`tools.figures.retired.recorded_names`)."""
    if not source.exists():
        raise FigureError(f"the figure's steps left no {source}")
    if source.name != "results.json":
        target.write_bytes(source.read_bytes())
        return
    data = recorded_names(json.loads(source.read_text()))
    config = data["record"]["config"]
    if config.get("trace"):
        config["trace"] = Path(config["trace"]).name
    target.write_text(json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n")


def git_commit(root: Path) -> str:
    """The checkout's commit, with ``+dirty`` when tracked files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        code = ("placer", "data", "benchmarks", "experiments/studies")
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *code], cwd=root).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")

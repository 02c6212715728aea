"""The figures of the README and docs/ cannot go stale: each block matches what its committed result files
render, each result folder was made with today's presets, and changing a preset turns exactly the
figures that use it red until ``python -m tools.figures --run`` makes them again."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from placer.common.shipped import data_dir
from tools.figures import app, core, stale
from tools.figures.registry import FIGURES, FOLDERS
from tools.figures.render import printed

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "experiments").glob("*.md"))]
NOT_REGENERATED = re.compile(r"<!-- not-regenerated: [^>]+ -->\n.*?<!-- /not-regenerated -->", re.S)


def with_sync(data: Path, preset: str, sync_s: float) -> None:
    """A copy of the shipped data/ at ``data`` (clusters copied, the rest linked) with ``preset``'s per-step overhead changed."""
    data.mkdir()
    for entry in data_dir().iterdir():
        if entry.name == "clusters":
            shutil.copytree(entry, data / "clusters")
        else:
            (data / entry.name).symlink_to(entry)
    path = data / "clusters" / f"{preset}.toml"
    text, count = re.subn(r"(?m)^sync_s = .*$", f"sync_s = {sync_s}", path.read_text())
    assert count == 1
    path.write_text(text)


def test_every_figure_is_current():
    assert stale(REPO, list(FIGURES)) == {}


def test_every_figure_has_one_block_in_its_document():
    for figure in FIGURES:
        assert figure.name in core.blocks((REPO / figure.document).read_text()), figure.name
    names = [name for doc in DOCS for name in core.blocks(doc.read_text())]
    assert sorted(names) == sorted(f.name for f in FIGURES)


def test_each_figure_keeps_its_results_in_the_folder_of_its_document():
    """The experiments' log's figures in experiments/results/, unless a figure of the README or docs/ reads them too;
    no result folder belongs to no figure."""
    read_outside = {name for f in FIGURES if not f.document.startswith("experiments/") for name in f.reads}
    for figure in FIGURES:
        logged = figure.document.startswith("experiments/") and figure.name not in read_outside
        assert core.results_dir(figure.name) == Path("experiments/results" if logged else "docs/results", figure.name)
    assert any(folder.parts[0] == "experiments" for folder in FOLDERS.values())
    found = {p.relative_to(REPO) for base in (core.RESULTS, core.LOG_RESULTS) for p in (REPO / base).iterdir() if p.is_dir()}
    assert found == set(FOLDERS.values())


def test_a_log_figure_read_by_a_docs_figure_keeps_its_results_in_docs():
    def toy(name: str, document: str, reads: tuple[str, ...] = ()) -> core.Figure:
        return core.Figure(name, document, (), (), printed("x"), reads=reads)

    figures = [
        toy("summary", "README.md", reads=("shared",)),
        toy("shared", "experiments/log.md"),
        toy("alone", "experiments/log.md"),
        toy("later", "experiments/log.md", reads=("alone", "shared")),
    ]
    assert core.result_folders(figures) == {
        "summary": Path("docs/results/summary"),
        "shared": Path("docs/results/shared"),
        "alone": Path("experiments/results/alone"),
        "later": Path("experiments/results/later"),
    }


def test_a_figure_reads_no_result_files_but_its_own_and_those_of_the_figures_it_names(monkeypatch):
    """``reads`` is what decides where a folder lives: every other figure's folder a render opens is named there."""
    from tools.figures import regimes, tradeoff

    opened: list[tuple[str, str]] = []

    def recording(folder: Path, name: str) -> Path:
        opened.append((folder.name, name))
        return core.beside(folder, name)

    monkeypatch.setattr(regimes, "beside", recording)
    monkeypatch.setattr(tradeoff, "beside", recording)
    for figure in FIGURES:
        figure.render(REPO / core.results_dir(figure.name))
    assert opened
    assert {(mine, other) for mine, other in opened} <= {(f.name, n) for f in FIGURES for n in (f.name, *f.reads)}
    assert all(other in FOLDERS for f in FIGURES for other in f.reads)


def test_every_result_path_the_docs_name_exists():
    """The paths the blocks print (``placer report docs/results/...``) and the prose names, ``NAME`` placeholders aside."""
    named = [(doc.name, path) for doc in DOCS for path in re.findall(r"(?:docs|experiments)/results/[\w.-]+(?:/[\w.-]+)?", doc.read_text())]
    assert any(path.startswith("experiments/") for _, path in named)
    assert [(doc, path) for doc, path in named if "NAME" not in path and not (REPO / path).exists()] == []


def result_lines(text: str) -> list[str]:
    """Table rows with a measured number (a decimal or a percentage outside code) and PNG links, outside figure blocks."""
    text = NOT_REGENERATED.sub("", core.BLOCK.sub("", text))
    found = []
    for line in text.splitlines():
        bare = re.sub(r"`[^`]*`", "", line)
        if (line.startswith("|") and re.search(r"\d\.\d|\d ?%", bare)) or re.search(r"!\[[^]]*\]\([^)]+\.png\)", line):
            found.append(line)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_result_table_and_plot_is_a_figure_or_marked_not_regenerated(doc):
    assert result_lines(doc.read_text()) == []


def test_a_result_table_outside_a_block_is_found():
    text = "<!-- figure: x -->\n| a | 0.5 |\n<!-- /figure -->\n| `0.1:10` | 3 |\n| b | 0.25 |\n![p](docs/p.png)\n"
    assert result_lines(text) == ["| b | 0.25 |", "![p](docs/p.png)"]


def test_changing_sync_s_of_dgx8x8_turns_exactly_its_figures_stale(tmp_path, monkeypatch):
    with_sync(tmp_path / "data", "dgx8x8", 0.02)
    monkeypatch.setenv("PLACER_DATA_DIR", str(tmp_path / "data"))
    found = stale(REPO, list(FIGURES))
    assert set(found) == {f.name for f in FIGURES if "dgx8x8" in f.presets}
    assert all(any("preset dgx8x8 changed" in why for why in reasons) for reasons in found.values())
    assert {"readme-pacml", "mixed-loss", "fidelity-gavel"}.isdisjoint(found)  # figures of other presets stay current
    result = CliRunner().invoke(app, ["--check"])
    assert result.exit_code == 1
    assert "dgx8x8-loss: preset dgx8x8 changed" in result.output


def test_the_check_passes_on_todays_presets():
    result = CliRunner().invoke(app, ["--check", "readme-pacml", "dgx8x8-loss"])
    assert result.exit_code == 0, result.output


def test_regenerating_turns_a_stale_figure_green_again(tmp_path, monkeypatch):
    """A toy figure in a scratch checkout: current, red once sync_s changes, green once made again by the one command."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    with_sync(tmp_path / "data", "dgx8x8", 0.016)
    monkeypatch.setenv("PLACER_DATA_DIR", str(tmp_path / "data"))
    root = tmp_path / "checkout"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "toy.md").write_text("# toy\n\n<!-- figure: toy -->\n<!-- /figure -->\n\nafter\n")
    step = core.Step("placer predict resnet50 --cluster dgx8x8 --degree 8", stdout="output.json")
    toy = core.Figure("toy", "docs/toy.md", ("dgx8x8",), (step,), printed("output.json"))
    assert core.problems(root, toy) and "no result files" in core.problems(root, toy)[0]

    core.run(root, toy)
    core.render(root, toy)
    assert core.problems(root, toy) == []
    before = (root / "docs" / "toy.md").read_text()
    assert '"iteration_s"' in before and before.endswith("<!-- /figure -->\n\nafter\n")

    with_sync(tmp_path / "data2", "dgx8x8", 0.05)
    monkeypatch.setenv("PLACER_DATA_DIR", str(tmp_path / "data2"))
    assert any("preset dgx8x8 changed" in why for why in core.problems(root, toy))

    core.run(root, toy)
    assert core.render(root, toy) is True
    assert core.problems(root, toy) == []
    assert (root / "docs" / "toy.md").read_text() != before  # the new overhead shows in the figure


def test_an_edited_block_is_stale_and_rendering_restores_it(tmp_path):
    figure = next(f for f in FIGURES if f.name == "decisions")
    root = tmp_path / "checkout"
    shutil.copytree(REPO / core.results_dir(figure.name), root / core.results_dir(figure.name))
    original = (REPO / figure.document).read_text()
    (root / figure.document).write_text(original.replace("| pacml | sipml |", "| pacml | SIPML |", 1))
    assert any("differs from what its result files render" in why for why in core.problems(root, figure))
    assert core.render(root, figure) is True
    assert (root / figure.document).read_text() == original


def test_a_plot_not_drawn_from_the_current_results_is_stale_and_rendering_redraws_it(tmp_path):
    figure = next(f for f in FIGURES if f.name == "scaling-dgx8x8")
    root = tmp_path / "checkout"
    shutil.copytree(REPO / core.results_dir(figure.name), root / core.results_dir(figure.name))
    shutil.copyfile(REPO / figure.document, root / figure.document)
    assert any("scaling_dgx8x8.png was not drawn" in why for why in core.problems(root, figure))  # no PNG yet
    assert core.render(root, figure) is True
    assert core.problems(root, figure) == []
    assert core.png_stamp(root / "docs" / "scaling_dgx8x8.png") == core.png_stamp(REPO / "docs" / "scaling_dgx8x8.png")

"""The fidelity-timeline figure: experiments/studies/fidelity_timeline.py's --json numbers rendered as docs/cost-model.md's table."""

import json

from tools.figures.render import timeline


def test_the_table_shows_each_calibration_and_the_form_kept_with_both_cross_validated_errors(tmp_path):
    row = {"after_calibrated": 0.085, "file_calibrated": 0.06, "before_calibrated": 0.787, "selected_calibrated": 0.0853}
    testbeds = [
        {"label": "Ethernet-TCP", **row, "selected_comm": 1.0, "selected_cv_comm": 0.028, "selected_cv_file": 0.208},
        {"label": "InfiniBand", **row, "selected_comm": 0.0, "selected_cv_comm": 0.02, "selected_cv_file": 0.021},
        {"label": "one server", **row, "selected_comm": 0.0},  # no form selection: no cross-validated pair
    ]
    (tmp_path / "timeline.json").write_text(json.dumps({"testbeds": testbeds}))
    (tmp_path / "figure.json").write_text(json.dumps({"commands": ["python experiments/studies/fidelity_timeline.py --json t.json"]}))
    lines = timeline("timeline.json")(tmp_path).markdown.splitlines()
    assert lines[:2] == ["    python experiments/studies/fidelity_timeline.py --json t.json", ""]
    assert lines[2].startswith("| testbed | file opted in (`kind`) | no opt-in keys, form selected (CV: opted-in / file form) |")
    assert lines[4:] == [
        "| Ethernet-TCP | 8.5 % | 8.5 %, opted-in kept (2.8 % / 20.8 %) | 6.0 % | 78.7 % |",
        "| InfiniBand | 8.5 % | 8.5 %, file form kept (2.0 % / 2.1 %) | 6.0 % | 78.7 % |",
        "| one server | 8.5 % | 8.5 %, file form kept | 6.0 % | 78.7 % |",
    ]

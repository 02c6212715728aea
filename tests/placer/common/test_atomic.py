"""check_writable: a path write_atomic could not write later is one line now, saying why."""

from __future__ import annotations

import pytest

from placer.common.atomic import check_writable, write_atomic
from placer.common.errors import OutputError


def test_a_path_under_a_file_a_missing_folder_or_a_folder_is_refused_with_its_reason(tmp_path):
    (tmp_path / "afile").write_text("hi\n")
    (tmp_path / "adir").mkdir()
    cases = {
        tmp_path / "afile" / "x.toml": "is a file, not a folder",
        tmp_path / "missing" / "x.toml": "does not exist",
        tmp_path / "adir": "it is a folder",
    }
    for path, why in cases.items():
        with pytest.raises(OutputError, match=why):
            check_writable(path, what="calibration")
    check_writable(tmp_path / "adir" / "x.toml")  # writable: no error, and write_atomic agrees
    write_atomic(tmp_path / "adir" / "x.toml", "ok\n")
    assert (tmp_path / "adir" / "x.toml").read_text() == "ok\n"

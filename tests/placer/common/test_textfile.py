"""Reading a user's text file: bounded, one error line."""

import pytest

from placer.common.errors import PlacerError
from placer.common.textfile import read_text


def test_an_endless_file_is_refused_at_the_cap():
    with pytest.raises(PlacerError, match=r"job graph '/dev/zero' is over 1,000 bytes"):
        read_text("/dev/zero", what="job graph", max_bytes=1000)


def test_a_file_at_the_cap_is_read_with_universal_newlines(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"a\r\nb\rc\n")
    assert read_text(path, what="file", max_bytes=7) == "a\nb\nc\n"
    with pytest.raises(PlacerError, match="over 6 bytes"):
        read_text(path, what="file", max_bytes=6)

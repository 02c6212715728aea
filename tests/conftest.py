from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def pipedream_dir() -> Path:
    """The PipeDream profiles in ``../shared`` beside the checkout (CI has them)."""
    path = REPO.parent / "shared" / "data" / "pipedream"
    if not path.is_dir():
        pytest.skip(f"{path} is not present beside this checkout")
    return path

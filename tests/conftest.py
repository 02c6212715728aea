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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n N`` (pytest-xdist, ``--dist loadgroup``) every test that starts Ray runs in one worker: the
    tests of the package-scoped real Ray cluster, and those that start their own instance (``--ray local``, the README's
    Ray block), so that no two Ray instances share the machine (two did, and a resize's DDP workers hung past 240 s)."""
    ray_tests = REPO / "tests" / "placer" / "ray"
    for item in items:
        if ray_tests in item.path.parents or _starts_ray(item):
            item.add_marker(pytest.mark.xdist_group("ray"))


def _starts_ray(item: pytest.Item) -> bool:
    """A test outside ``tests/placer/ray`` that starts a Ray instance of its own."""
    if item.name == "test_ray_gives_the_serial_results":
        return True
    code = getattr(getattr(item, "callspec", None), "params", {}).get("code")
    return item.path.name == "test_readme.py" and isinstance(code, str) and "placer.ray" in code

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RAY = "ray"  # the xdist group of every test that starts Ray


@pytest.fixture
def pipedream_dir() -> Path:
    """The PipeDream profiles in ``../shared`` beside the checkout (CI has them)."""
    path = REPO.parent / "shared" / "data" / "pipedream"
    if not path.is_dir():
        pytest.skip(f"{path} is not present beside this checkout")
    return path


def pytest_configure(config: pytest.Config) -> None:
    """Compile the engine once, before any worker starts (pytest-xdist's controller, or the one process): a fresh
    clone's first engine run compiles it (43 s on 2 cores), and the workers and the commands the tests start then load it
    from numba's cache instead of each compiling it under a test's time limit."""
    if not hasattr(config, "workerinput"):
        from placer.sim.engine.stream import warm_up

        warm_up()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n N`` (pytest-xdist, ``--dist loadgroup``) the tests of one real Ray cluster run in one worker:
    its fixture is package-scoped, and a second worker would start a second cluster beside it. A test elsewhere that
    starts a Ray instance of its own joins them with ``@pytest.mark.xdist_group(RAY)``, so that no two Ray instances
    share the machine (two did, and a resize's DDP workers hung past 240 s)."""
    ray_tests = REPO / "tests" / "placer" / "ray"
    for item in items:
        if ray_tests in item.path.parents:
            item.add_marker(pytest.mark.xdist_group(RAY))

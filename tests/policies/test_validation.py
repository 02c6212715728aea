import numpy as np
import pytest

from placer.envs.config import EnvConfig
from placer.policies.validation import validation_rates


@pytest.fixture
def bars_shown(monkeypatch):
    """Progress bars drawn although stderr is captured (no terminal): they are what these tests read."""
    for module in ('placer.policies.validation',):
        monkeypatch.setattr(f"{module}.bar_off", lambda progress: not progress)



def test_validation_in_processes_gives_the_same_rates_in_the_same_order(capsys, bars_shown):
    # two clusters x two loads x beta A-D: 16 streams, each a task whose result depends only on its seed
    env = EnvConfig(
        clusters=("pacml", "dgx8x8"), graphs=["alexnet", "gnmt"], episode_jobs=24, loads=(0.7, 1.3), max_nodes=64, max_edges=128
    )
    here = validation_rates("para_min", env, 1)
    assert len(here) == 16 and len(set(here.tolist())) > 1  # distinct streams, so an order mix-up would show
    assert "validating" not in capsys.readouterr().err  # no bar unless asked
    np.testing.assert_array_equal(validation_rates("para_min", env, 1, workers=2, progress=True), here)
    assert "validating para_min" in (err := capsys.readouterr().err) and "/16 " in err  # one bar over every worker's streams


def test_a_policy_file_validates_to_the_same_rates_here_and_over_workers():
    from placer.common.shipped import shipped_policy_file
    from placer.policies.loading import LearnedPolicy
    from placer.policies.validation import policy_file_rates

    path = shipped_policy_file("pacml")
    data = LearnedPolicy.from_file(path).env.model_dump()
    data["workload"] |= {"jobs": 24, "beta_dists": ["A", "C"], "size": ["const"], "queue": ["none"]}
    env = EnvConfig.model_validate(data | {"clusters": ["pacml"], "loads": [0.9, 1.3]})
    here = validation_rates(LearnedPolicy.from_file(path), env, 1)
    assert len(here) == 4 and len(set(here.tolist())) > 1  # distinct streams, not one rate repeated
    assert policy_file_rates(path, env, 1, workers=2).tolist() == here.tolist()


def test_named_rates_survive_a_restart_in_their_file(tmp_path):
    from placer.policies.validation import RatesCache

    env = EnvConfig(graphs=["alexnet"], episode_jobs=8, clusters=("pacml",), loads=(0.5,), beta_dists=("A",))
    first = RatesCache(tmp_path / "rates.json").rates("para_min", env, 1)
    again = RatesCache(tmp_path / "rates.json")
    assert again._rates and again.rates("para_min", env, 1).tolist() == first.tolist()
    (tmp_path / "rates.json").write_text("{not json")
    assert RatesCache(tmp_path / "rates.json")._rates == {}  # measured again, never trusted half-written


def test_rates_are_kept_per_evaluation_so_a_repeated_or_shared_setting_is_measured_once(tmp_path, monkeypatch):
    import json

    from placer.policies import validation

    base = EnvConfig(graphs=["alexnet"], episode_jobs=8, clusters=("pacml",), loads=(0.5, 0.9), beta_dists=("A",))
    repeated = base.model_copy(update={"settings": ({}, {}, {"loads": [0.7]})})  # [env] twice, then a load of its own
    measured: list[int] = []
    real = validation.config_rates
    monkeypatch.setattr(validation, "config_rates", lambda policy, todo, *a, **k: measured.append(len(todo)) or real(policy, todo, *a, **k))
    cache = validation.RatesCache(tmp_path / "rates.json")
    alone = cache.rates("para_min", base, 1)
    both = cache.rates("para_min", repeated, 1)
    assert measured == [1, 1]  # [env]'s evaluation once, then only the load-0.7 one
    assert both.tolist()[:2] == alone.tolist() and len(both) == 3  # [env]'s streams counted once, as validation regimes are
    assert len(validation.validation_regimes(repeated, 1)) == 3
    # a file of the earlier layout (a whole validation under one key, its evaluations joined by newlines) is split
    entries = json.loads((tmp_path / "rates.json").read_text())
    joined = {"policy": "para_min", "episodes": 1, "streams": "\n".join(e["streams"] for e in entries), "rates": both.tolist()}
    (tmp_path / "rates.json").write_text(json.dumps([joined]))
    assert validation.RatesCache(tmp_path / "rates.json").rates("para_min", repeated, 1).tolist() == both.tolist()
    assert measured == [1, 1]
    # two caches on one file (stages in two processes): each one's save keeps what the other wrote
    one, other = validation.RatesCache(tmp_path / "rates.json"), validation.RatesCache(tmp_path / "rates.json")
    one.rates("para_max", base, 1)
    other.rates("lean", base, 1)
    assert {p for p, _, _ in validation.RatesCache(tmp_path / "rates.json")._rates} == {"para_min", "para_max", "lean"}


def test_a_policy_files_rates_are_kept_by_its_content(tmp_path, monkeypatch):
    import shutil

    from placer.common.shipped import shipped_policy_file
    from placer.policies import validation
    from placer.policies.loading import LearnedPolicy
    from placer.policies.model import load_policy_file, save_policy_file
    from placer.policies.policy_file import read_policy_file

    path = tmp_path / "student.pt"
    shutil.copyfile(shipped_policy_file("pacml"), path)
    data = LearnedPolicy.from_file(path).env.model_dump()
    data["workload"] |= {"jobs": 8, "beta_dists": ["A"], "size": ["const"], "queue": ["none"]}
    env = EnvConfig.model_validate(data | {"clusters": ["pacml"], "loads": [0.9]})
    measured: list[str] = []
    real = validation.file_config_rates
    monkeypatch.setattr(validation, "file_config_rates", lambda *a, **k: measured.append(str(a[0])) or real(*a, **k))
    first = validation.RatesCache(tmp_path / "rates.json").file_rates(path, env, 1)
    assert validation.RatesCache(tmp_path / "rates.json").file_rates(path, env, 1).tolist() == first.tolist()
    assert len(measured) == 1  # the resumed cache read it back
    policy, _ = load_policy_file(path)
    payload = read_policy_file(path)
    again = tmp_path / "saved-again.pt"
    save_policy_file(again, policy, payload.env, {"hidden": payload.hidden, "rounds": payload.rounds, "net_arch": payload.net_arch})
    assert again.read_bytes() != path.read_bytes()  # torch.save writes another id into the same policy's file
    validation.RatesCache(tmp_path / "rates.json").file_rates(again, env, 1)
    assert len(measured) == 1  # the same policy: its digest, not its bytes, keys its rates
    shutil.copyfile(shipped_policy_file("placer"), path)  # other weights in the same file: measured again
    validation.RatesCache(tmp_path / "rates.json").file_rates(path, env, 1)
    assert len(measured) == 2

"""The recipe: stages resolved and validated up front, the RL winner, per-regime validation, promotion, and (slow) the
shipped quick recipe end to end with a resume."""

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from placer.common.errors import PlacerError
from placer.common.shipped import data_dir
from placer.envs.config import EnvConfig
from placer.envs.regime import Regime
from placer.policies.policy_file import read_policy_file
from placer.policies.promotion import check_incumbent, check_promote_target, promote_with_card
from placer.policies.recipe import choose_rl_winner, is_recipe, load_recipe, run_recipe
from placer.policies.validation import RegimeRow, regime_rows, validation_rates, validation_regimes

CONFIGS = data_dir() / "configs"


def test_the_shipped_recipe_resolves_into_chained_stages(tmp_path):
    recipe = load_recipe(CONFIGS / "placer.toml", tmp_path / "out")
    assert [s.name for s in recipe.stages] == ["clone", "rl-seed1", "rl-seed2", "rl-seed3", "distil"]
    clone, rl, distil = recipe.clone.config, recipe.rl[0].config, recipe.distil.config
    assert clone.train.timesteps == distil.train.timesteps == 0 and rl.train.timesteps == 100_000
    assert {s.config.train.seed for s in recipe.rl} == {1, 2, 3}
    assert rl.train.init_policy == str(tmp_path / "out" / "clone" / "policy.pt")  # no policy file is an input of the recipe
    assert distil.train.candidate_policy_file == str(tmp_path / "out" / "rl-winner.pt")
    assert rl.ppo.anchor_kl == 0.1 and rl.train.ppo_baseline and clone.ppo.anchor_kl == 0.0
    assert distil.env.advisers and not clone.env.advisers and not rl.env.advisers
    assert distil.train.teacher_resolved and distil.train.teacher_margin == 0.1  # the RL winner teaches where it leads, resolved
    assert is_recipe(CONFIGS / "quick.toml") and load_recipe(CONFIGS / "quick.toml", tmp_path).distil.config.env.advisers


def test_a_mistake_in_any_stage_is_one_line_before_anything_runs(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(f'extends = "{CONFIGS / "quick.toml"}"\n[recipe.rl.train]\ntimesteps = -5\n')
    with pytest.raises(PlacerError, match="stage rl-seed1: train.timesteps"):
        load_recipe(bad, tmp_path / "out")
    bad.write_text(f'extends = "{CONFIGS / "quick.toml"}"\n[recipe.distil.train]\nteacher_candidates = []\n')
    with pytest.raises(PlacerError, match="candidate_policy_file|teacher_candidates must list"):
        load_recipe(bad, tmp_path / "out")
    bad.write_text(f'extends = "{CONFIGS / "quick.toml"}"\n[recipe]\nrl_seed = [4]\n')
    with pytest.raises(PlacerError, match=r"\[recipe\]: rl_seed"):
        load_recipe(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_rl_winner_is_the_seed_whose_validated_best_blocked_least(tmp_path):
    for name, rates in {"rl-seed1": [0.30, 0.26], "rl-seed2": [0.30, 0.24, 0.27], "rl-seed3": [0.30, 0.24]}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "eval.jsonl").write_text("".join(json.dumps({"timesteps": 0, "learned": r}) + "\n" for r in rates))
    choice = choose_rl_winner(tmp_path, ["rl-seed1", "rl-seed2", "rl-seed3"])
    assert choice == {"winner": "rl-seed2", "blocking": {"rl-seed1": 0.26, "rl-seed2": 0.24, "rl-seed3": 0.24}}  # first of equals


def test_regime_rows_pair_streams_within_each_regime():
    a, b = Regime("dgx8x8", 0.5, "*", "edf-bf", "const", "iid"), Regime("dgx8x8", 0.9, "*", "edf-bf", "const", "iid")
    learned = np.array([0.1, 0.2, 0.3, 0.5])
    reference = np.array([0.2, 0.2, 0.2, 0.4])
    rows = regime_rows(learned, reference, [b, a, b, a])
    assert [r.regime for r in rows] == [str(a), str(b)]
    low, high = rows
    assert (low.streams, low.learned, low.reference) == (2, pytest.approx(0.35), pytest.approx(0.3))
    assert low.difference == pytest.approx(-0.05) and high.difference == pytest.approx(0.0)
    assert high.not_worse and not math.isnan(low.half)
    worse = RegimeRow(regime="x", streams=3, learned=0.3, reference=0.2, difference=-0.1, half=0.05)
    assert not worse.not_worse and RegimeRow(regime="x", streams=3, learned=0.3, reference=0.2, difference=-0.1, half=0.2).not_worse
    with pytest.raises(ValueError, match="3 regimes"):
        regime_rows(learned, reference, [a, b, a])


def test_validation_regimes_follow_the_validation_streams():
    env = EnvConfig(graphs=["alexnet"], episode_jobs=8, clusters=("pacml",), loads=(0.5, 0.9), beta_dists=("A", "B"))
    regimes = validation_regimes(env, 2)
    assert len(regimes) == len(validation_rates("para_min", env, 2)) == 8
    assert [r.load for r in regimes] == [0.5] * 4 + [0.9] * 4  # load by load, as the runner reports


def test_promotion_needs_every_regime_and_a_writable_target(tmp_path):
    student, card = tmp_path / "student.pt", tmp_path / "card.json"
    student.write_bytes(b"weights")
    card.write_text("{}")
    heard: list[str] = []
    worse = RegimeRow(regime="mixed, load 1.3", streams=4, learned=0.3, reference=0.2, difference=-0.1, half=0.02)
    level = RegimeRow(regime="dgx8x8, load 0.5", streams=4, learned=0.2, reference=0.2, difference=0.0, half=0.02)
    promote_with_card(student, card, tmp_path / "shipped" / "p.pt", [level, worse], heard.append)
    assert not (tmp_path / "shipped").exists() and "mixed, load 1.3" in heard[-1]
    promote_with_card(student, card, tmp_path / "shipped" / "p.pt", [level], heard.append)
    assert (tmp_path / "shipped" / "p.pt").read_bytes() == b"weights" and (tmp_path / "shipped" / "p.card.json").exists()
    # level with best, but behind the policy it would replace somewhere: that one stays
    (tmp_path / "shipped" / "p.pt").write_bytes(b"today's")
    promote_with_card(student, card, tmp_path / "shipped" / "p.pt", [level], heard.append, incumbent=[level, worse])
    assert (tmp_path / "shipped" / "p.pt").read_bytes() == b"today's" and "than the policy at" in heard[-1]
    promote_with_card(student, card, tmp_path / "shipped" / "p.pt", [level], heard.append, incumbent=[level])
    assert (tmp_path / "shipped" / "p.pt").read_bytes() == b"weights"
    with pytest.raises(PlacerError, match="cannot be read"):  # the policy it would replace must be one: checked first
        check_incumbent(tmp_path / "shipped" / "p.pt")
    check_incumbent(tmp_path / "nothing-there.pt")
    with pytest.raises(PlacerError, match="is a folder"):
        check_promote_target(tmp_path)
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(PlacerError, match="cannot write"):
            check_promote_target(locked / "p.pt")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(PlacerError, match="not a folder"):
        check_promote_target(blocker / "sub" / "p.pt")


def test_a_bad_promote_target_is_refused_before_any_stage_runs(tmp_path):
    recipe = load_recipe(CONFIGS / "quick.toml", tmp_path / "out")
    with pytest.raises(PlacerError, match="is a folder"):
        run_recipe(recipe, tmp_path / "out", progress=False, promote=tmp_path)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.timeout(1500)  # about 150 s alone on 2 cores; beside other work it once passed 600 s (a flake, not a fault)
def test_the_quick_recipe_runs_end_to_end_writes_its_card_and_resumes(tmp_path):
    from placer.policies.recipe import for_cluster

    out = tmp_path / "quick"
    mine = for_cluster(str(Path(__file__).with_name("team4x4.toml")), [0.5, 0.9])  # a cluster file, as a user trains for theirs
    recipe = load_recipe(CONFIGS / "quick.toml", out, mine)
    heard: list[str] = []
    product = run_recipe(recipe, out, progress=False, report=heard.append, promote=tmp_path / "shipped" / "quick.pt")
    card = json.loads((out / "card.json").read_text())
    chosen = card["product"]["chosen"]  # the student or the RL winner, whichever validated better: a copy of its file
    files = {"student": out / "distil" / "policy.pt", "rl-winner": out / "rl-winner.pt"}
    assert product == out / "policy.pt" and product.read_bytes() == files[chosen].read_bytes()
    assert set(card["product"]["candidates"]) == set(files) and card["regimes"] == card["product"]["candidates"][chosen]["regimes"]
    assert card["seeds"]["rl"] == [1, 2] and card["rl"]["winner"] in ("rl-seed1", "rl-seed2")
    assert set(card["stages"]) == {"clone", "rl-seed1", "rl-seed2", "distil"} and all(s["wall_s"] > 0 for s in card["stages"].values())
    assert card["invocations"] == 1 and all(s["invocations"] == 1 for s in card["stages"].values())
    assert card["teacher_table"]["tuned_for"]["candidates"] == ["learned"]  # the distil stage scored the RL winner
    assert (out / "rl-winner.pt").read_bytes() == (out / card["rl"]["winner"] / "best.pt").read_bytes()
    assert [r["regime"].split(",")[1].strip() for r in card["regimes"]] == ["load 0.5", "load 0.9"]
    shipped = card["verdict"]["shipped"]  # the shipped policy, validated on the same streams for the verdict
    assert [r["regime"] for r in shipped["regimes"]] == [r["regime"] for r in card["regimes"]] and shipped["policy"].endswith("placer.pt")
    assert card["verdict"]["serve"] in ("learned", "shipped") or "learning did not pay here: this run" in " ".join(" ".join(heard).split())
    promoted = card["no_worse_than_best_everywhere"]
    assert (tmp_path / "shipped" / "quick.pt").exists() == promoted
    assert (
        json.loads((out / "rl-seed1" / "members.json").read_text())["members"]
        == json.loads((out / "clone" / "members.json").read_text())["members"]
    )  # the RL stages read the clone's table instead of tuning it again
    with pytest.raises(PlacerError, match="not empty"):
        run_recipe(recipe, out, progress=False)
    heard.clear()
    today = tmp_path / "today" / "quick.pt"  # a policy already where it would land: the product must match it too
    today.parent.mkdir()
    shutil.copyfile(product, today)
    run_recipe(recipe, out, resume=True, progress=False, report=heard.append, promote=today)
    assert sum("finished in an earlier run" in line for line in heard) == 4
    again = json.loads((out / "card.json").read_text())
    assert again["invocations"] == 2 and again["wall_s"] >= card["wall_s"] and again["stages"] == card["stages"]
    assert [r["difference"] for r in again["against_incumbent"]["regimes"]] == [0.0, 0.0]  # itself, on the same streams

    # spread out: the RL seeds at once in their own processes, tuning and validation over 2; the same policies
    spread = tmp_path / "spread"
    shutil.copytree(out / "clone", spread / "clone")  # the clone's recording keeps its own imitation_workers either way
    run_recipe(load_recipe(CONFIGS / "quick.toml", spread, mine), spread, resume=True, progress=False, workers=2)
    for name in ("rl-seed1/best.pt", "rl-seed2/best.pt", "distil/policy.pt"):
        ours, theirs = read_policy_file(out / name).state_dict, read_policy_file(spread / name).state_dict
        assert ours.keys() == theirs.keys() and all(np.array_equal(ours[k], theirs[k]) for k in ours), name
    assert json.loads((spread / "card.json").read_text())["regimes"] == card["regimes"]


def test_a_recipe_for_your_cluster_trains_there_alone(tmp_path):
    from placer.policies.recipe import for_cluster

    mine = str(Path(__file__).with_name("team4x4.toml"))
    recipe = load_recipe(CONFIGS / "placer.toml", tmp_path, for_cluster(mine, [0.5, 1.3], ["resnet50", "gnmt"]))
    for stage in recipe.stages:  # the distil stage's own settings (PAC-ML's cluster among them) are dropped too
        env = stage.config.env
        assert env.all_clusters == (mine,) and env.loads == (0.5, 1.3) and env.workload.graphs == ("resnet50", "gnmt")
    trace = tmp_path / "arrivals.csv"  # your own arrival times: every stage replays windows of their first two thirds
    trace.write_text("arrival_s\n" + "".join(f"{t * t}\n" for t in range(40)))
    recipe = load_recipe(CONFIGS / "placer.toml", tmp_path, for_cluster(mine, None, ["gnmt"], trace))
    for stage in recipe.stages:
        workload = stage.config.env.workload
        assert workload.structure == (f"replay:{trace}:part=train",) and workload.graphs == ("gnmt",), stage.name


def test_loads_are_parsed_in_one_line():
    from placer.policies.recipe import parse_loads

    assert parse_loads("0.5,1.3") == [0.5, 1.3]
    for bad in ("0.5,x", "0", "-1", "1e9", "nan"):
        with pytest.raises(PlacerError, match="--load"):
            parse_loads(bad)


def test_wall_time_counts_every_invocation_once(tmp_path, monkeypatch):
    from placer.policies import wallclock

    clock = iter([100.0, 120.0, 130.0, 500.0, 510.0])
    monkeypatch.setattr(wallclock.time, "monotonic", lambda: next(clock))
    first = wallclock.time.monotonic()  # 100: an invocation that beat at 20 s and was cut short at 30 s
    assert wallclock.clocked(tmp_path, first, finished=False) == {"wall_s": 20.0, "invocations": 1}
    assert wallclock.clocked(tmp_path, first, finished=False) == {"wall_s": 30.0, "invocations": 1}  # its line rewritten
    second = wallclock.time.monotonic()  # 500: the resume, 10 s to the end
    assert wallclock.clocked(tmp_path, second, finished=True) == {"wall_s": 40.0, "invocations": 2}
    assert wallclock.clocked(tmp_path, second, finished=False) == {"wall_s": 40.0, "invocations": 2}  # its finally: not twice
    assert len((tmp_path / wallclock.WALL).read_text().splitlines()) == 2


def test_an_invocation_killed_outright_still_counts_up_to_its_last_beat(tmp_path):
    import json
    import time

    from placer.policies.wallclock import WALL, clock

    with clock(tmp_path, every_s=0.05):
        time.sleep(0.3)
        line = json.loads((tmp_path / WALL).read_text())  # what a kill -9 here would leave
        assert line["wall_s"] > 0 and not line["finished"]
    with clock(tmp_path) as finish:
        totals = finish()
    assert totals["invocations"] == 2 and [json.loads(x)["finished"] for x in (tmp_path / WALL).read_text().splitlines()] == [False, True]


def test_the_command_line_refuses_bad_input_in_one_line_before_any_work(tmp_path):
    import subprocess
    import sys

    def placer(*args):
        return subprocess.run([sys.executable, "-m", "placer", *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)

    quick = str(CONFIGS / "quick.toml")
    for args, message in [
        (["train", "--config", quick, "--out", "o", "--promote", str(tmp_path)], "is a folder"),
        (["train", "--config", quick, "--out", "o", "--cluster", "nosuch.toml"], "nosuch.toml"),
        (["train", "--config", quick, "--out", "o", "--load", "0.9"], "go with --cluster"),
        (["train", "--config", str(CONFIGS / "pacml.toml"), "--out", "o", "--cluster", "dgx8x8"], "not one"),
        (["train", "--config", quick, "--out", "o", "--workers", "2", "--ray", "local"], "give one"),
        (["train", "--config", quick, "--out", "o", "--trace", "t.csv"], "go with --cluster"),
        (["train", "--config", quick, "--out", "o", "--cluster", "dgx8x8", "--trace", "none.csv"], "cannot read trace"),
        (["train", "--config", str(CONFIGS / "pacml.toml"), "--out", "o", "--ray", "127.0.0.1:1"], "not one"),
        (["train", "--config", quick, "--out", "o", "--ray", "127.0.0.1:1"], "cannot reach a Ray cluster at '127.0.0.1:1'"),
        (["clusters", "check"], "usage"),
    ]:
        done = placer(*args)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    assert not (tmp_path / "o").exists()
    checked = placer("clusters", "check", str(Path(__file__).with_name("team4x4.toml")))
    assert checked.returncode == 0 and "team4x4" in checked.stdout and "16 devices" in checked.stdout

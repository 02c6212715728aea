"""Every figure of the README, ``docs/`` and the experiments' log: its block, the presets it reads, the commands that make its
result files and how they render. Add a figure here and a ``<!-- figure: NAME -->`` block where it goes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tools.figures.build import evaluated, slug
from tools.figures.core import Figure, Step, result_folders
from tools.figures.elastic import ADMITTED, admission_table
from tools.figures.field import PHILLY_WINDOWS, elastic_figure, field_files, trace_families
from tools.figures.regimes import FIELD, reads, regimes
from tools.figures.render import evaluation, printed, scaling, timeline
from tools.figures.tradeoff import tradeoff

ABCD = "--beta-dist A,B,C,D"
FIVE, THREE = "--seeds 5 --jobs 1000", "--seeds 3 --jobs 1000"
LEARNED = "--policy-file data/policies/pacml.pt --workers 2"
LOSS = "learned,para_max,para_min,para_min+best_fit,lean"
QUEUE = "--queue edf-bf --size loguniform:0.1:10 --beta-dist A,B,C,D --seeds 5 --jobs 300"
QUEUE_POLICIES = "learned,lean,lean@edf,lean@fifo,lean@fifo-bf,lean@sjf-bf,para_min+best_fit,lean:admit=0.9,lean:admit=0.9:free=0.3"
LOOKAHEAD, HINDSIGHT = "lookahead:admit=0.9:k=2:h=8", "hindsight:admit=0.9:h=24:m=0.5"
PLANNERS = (("results", ""), ("lookahead", "-lookahead"), ("hindsight", "-hindsight"))
HELD_OUT = "--graphs resnet101,resnext50,resnext101,gnmt_large,nasnetamobile,nasnetalarge"
TRACE_QUEUE = "learned,lean,lean@edf,para_min+best_fit,lean:admit=0.9"
GAVEL_IMPORT = "placer import trace gavel data/traces/gavel_msr_0e4a51.trace --out runs/figures/gavel.csv"
PHILLY_IMPORT = "placer import trace philly data/traces/philly_pollux.csv --vc 6214e9 --jobs 600 --out runs/figures/philly.csv"

STUDIES = "experiments/studies"  # the one-off analyses some figures print
RESULTS_MD = "docs/results.md"
LEARNING_MD = "docs/learning.md"  # the shipped policy: how it is made, where it wins and where it does not
LEARNING_LOG = "experiments/learning-log.md"  # every earlier experiment's figures, in the order they were made
COST_MD = "docs/cost-model.md"
ELASTIC_MD = "docs/elastic.md"
ELASTIC_ADMISSION = "--cluster dgx8x8 --queue none --beta-dist A --seeds 3 --jobs 300 --iterations 100000 --load 0.9,1.5"

REGIMES = "--queue edf-bf --size loguniform:0.1:10 --beta-dist A,B,C,D --seeds 10 --jobs 500 --load 0.5,0.9,1.3 --workers 2"
FAMILIES = (
    "lean,lean:admit=0.9,lean:admit=0.9+best_fit,fixed:8,para_max,para_min+best_fit,eff:0.7,switch:0.5,single-best,best,adaptive,"
    "learned:pacml,learned:regimes,learned:clone,learned:default"
)

APART = {  # label -> (cluster, extra options): the README's regimes on streams apart from the figures' (seeds from 100)
    "dgx8x8, Poisson": ("dgx8x8", ""),
    "mixed, Poisson": ("mixed", ""),
    "dgx8x8, daily": ("dgx8x8", " --structure daily"),
    "mixed, daily": ("mixed", " --structure daily"),
}
GATES = "single-best,best,adaptive,learned:default,learned:default:below=1,learned:default:below=1.15,learned:default:below=1.3"
CANDIDATE = "learned:targeted"  # experiments/configs/targeted.toml's policy: PPO on the regimes where learned:default lost
ADVISED = "learned:advised"  # experiments/configs/advised.toml's clone, shown its teacher's members' decisions (envs/advice.py)
BLEND = "learned:blend"  # experiments/configs/blend.toml's: as advised, taught by learned:default where that blocked less in tuning
BLEND_MARGIN = "learned:blend-margin"  # blend-margin.toml's: ...only where it led by 10 % (judged on the README's streams)
BLEND_QUIET = "learned:blend-quiet"  # blend-quiet.toml's: blend-margin's training with 3.5x the episodes at load 0.5
# the policies shown beside the shipped learned (blend-quiet): the heuristics told and untold the regime, its predecessor, PAC-ML's clone
SHIPPED_BESIDE = ("single-best", "best", "adaptive", BLEND_QUIET)
NEVER_HOLD_SEEDS = "--first-seed 100 --seeds 3"  # gate-waiting's streams
WAITING_GATES = "best,learned:default:waiting=2,learned:default:waiting=3,learned:default:waiting=4"
REGIME_RUNS = {  # label -> (figure whose evaluation it is, its cluster and extra options)
    "dgx8x8, Poisson": ("families-loads", "dgx8x8", ""),
    "mixed, Poisson": ("families-loads-mixed", "mixed", ""),
    "dgx8x8, daily": ("families-daily", "dgx8x8", " --structure daily"),
    "mixed, daily": ("families-daily-mixed", "mixed", " --structure daily"),
    "dgxh100, Poisson": ("families-loads-dgxh100", "dgxh100", ""),
    "dgx8x8, Philly arrivals": ("families-philly", "dgx8x8", " --structure replay:philly"),  # an arrival pattern never trained on
}

TRADEOFF_RUNS = {label: name for label, (name, _, _) in list(REGIME_RUNS.items())[:4]}  # label -> figure: the README's four regimes
ELASTIC_REGIMES = tuple(REGIME_RUNS)  # the regimes the elastic policies run on: the README's


AGAINST_SINGLE_BEST: dict[str, Any] = {"against": "single-best", "outcomes": True}


def _regime_figure(
    name: str,
    policies: str,
    runs: dict[str, tuple[str, str]],
    options: str,
    beside: Mapping[str, tuple[str, ...]],
    *,
    least: bool,
    only: tuple[str, ...],
) -> Figure:
    """``placer evaluate OPTIONS --policies POLICIES`` in each regime of ``runs`` (label -> (cluster, extra options)),
    rendered as the README's regime table with ``beside``'s result files (label -> files of the same streams) paired in."""
    steps = tuple(
        Step(f"placer evaluate --cluster {cluster} {options}{extra} --policies {policies} --out runs/figures/{name}/{slug(label)}")
        for label, (cluster, extra) in runs.items()
    )
    keep = {f"{slug(label)}.json": f"runs/figures/{name}/{slug(label)}/results.json" for label in runs}
    files = {label: (*beside.get(label, ()), f"{name}/{slug(label)}.json") for label in runs}
    presets = tuple(dict.fromkeys(cluster for cluster, _ in runs.values()))
    others = tuple(figure for figure in reads(files) if figure != name)
    return Figure(name, LEARNING_LOG, presets, steps, regimes(files, least=least, only=only), keep=keep, reads=others)


def _apart(name: str, policies: str, *, seeds: int, least: bool = False, beside: str | None = None) -> Figure:
    """``policies`` in the regimes of :data:`APART` on ``seeds`` seeds from 100, apart from every other figure's streams,
    rendered as the README's regime table (``least``: ending with the learned variant that blocks least; ``beside``:
    another such figure of the same seeds whose policies show too, ``learned:default`` and the three tuned ones)."""
    options = REGIMES.replace("--seeds 10", f"--first-seed 100 --seeds {seeds}")
    files = {label: (f"{beside}/{slug(label)}.json",) for label in APART} if beside else {}
    only = ("single-best", "best", "adaptive", "learned:default", *policies.split(",")) if beside else ()
    return _regime_figure(name, policies, APART, options, files, least=least, only=only)


def _beside(
    name: str, policies: str, runs: dict[str, tuple[str, str, str]], *, first_seed: int = 0, also: tuple[tuple[str, str], ...] = ()
) -> Figure:
    """``policies`` alone on the streams of other figures' evaluations (``runs``: label -> (their result file, cluster, extra
    options); 10 seeds from ``first_seed``), rendered as the README's regime table with those evaluations' tuned
    heuristics and ``learned:default`` beside them, paired on the same streams, ending with the learned policy that blocks
    least. ``also``: (figure, policy) pairs of earlier such figures of the same labels whose policy shows too."""
    options = REGIMES.replace("--seeds 10", "--seeds 10" if first_seed == 0 else f"--first-seed {first_seed} --seeds 10")
    regimes_of = {label: (cluster, extra) for label, (_, cluster, extra) in runs.items()}
    files = {label: (other, *(f"{figure}/{slug(label)}.json" for figure, _ in also)) for label, (other, _, _) in runs.items()}
    only = ("single-best", "best", "adaptive", "learned:default", *(policy for _, policy in also), *policies.split(","))
    return _regime_figure(name, policies, regimes_of, options, files, least=True, only=only)


def _summary(
    name: str, document: str, presets: tuple[str, ...], files: dict[str, tuple[str, ...]], only: tuple[str, ...], wide: bool = False
) -> Figure:
    """A regime table of other figures' result files alone (``files``: label -> ``FIGURE/FILE``s), no commands of its own
    (``wide``: the pooled table one row per evaluation)."""
    return Figure(name, document, presets, (), regimes(files, only=only, wide=wide), reads=reads(files))


_REGISTERED: tuple[Figure, ...] = (
    evaluated(
        "readme-pacml",
        RESULTS_MD,
        ("pacml",),
        f"--cluster pacml {ABCD} {FIVE} --policies para_max,fixed:4,para_min,lean,learned,learned:clone,learned:default {LEARNED}",
        against="para_max",
    ),
    evaluated(
        "pacml-sipml",
        RESULTS_MD,
        ("pacml",),
        f"--cluster pacml --strategy sipml --beta-dist A,B,C,D --seeds 5 --jobs 1000 "
        f"--policies learned,para_max,para_min,para_min+best_fit,fixed:4,fixed:8,random,lean {LEARNED}",
        against="para_max",
    ),
    evaluated("pacml-auto", RESULTS_MD, ("pacml",), f"--cluster pacml {ABCD} {FIVE} --policies {LOSS} {LEARNED}", against="lean"),
    evaluated(
        "dgx8x8-loss",
        RESULTS_MD,
        ("dgx8x8",),
        f"--cluster dgx8x8 --beta-dist A,B,C,D --seeds 5 --jobs 1000 --policies {LOSS},lean:admit=0.9 {LEARNED}",
        against="lean",
        image="docs/blocking_rate_dgx8x8.png",
        alt="blocking rate on dgx8x8",
    ),
    evaluated("heldout-loss", RESULTS_MD, ("dgx8x8",), f"--cluster dgx8x8 {HELD_OUT} {ABCD} {THREE} --policies {LOSS} {LEARNED}"),
    evaluated("mixed-loss", RESULTS_MD, ("mixed",), f"--cluster mixed {ABCD} --seeds 3 --jobs 1000 --policies {LOSS} {LEARNED}"),
    evaluated(
        "transformers-loss",
        RESULTS_MD,
        ("dgx8x8",),
        f"--cluster dgx8x8 --graphs gpt2_small,gpt2_medium,bert_base,llama_850m {ABCD} --seeds 3 --jobs 1000 --policies {LOSS} {LEARNED}",
    ),
    evaluated(
        "gavel-loss",
        RESULTS_MD,
        ("dgx8x8",),
        f"--cluster dgx8x8 --trace runs/figures/gavel.csv --seeds 1 --policies {LOSS} {LEARNED}",
        before=(GAVEL_IMPORT,),
    ),
    evaluated(
        "gavel-queue",
        RESULTS_MD,
        ("dgx8x8",),
        f"--cluster dgx8x8 --trace runs/figures/gavel.csv --seeds 1 --queue edf-bf --policies {TRACE_QUEUE} {LEARNED}",
        before=(GAVEL_IMPORT,),
    ),
    evaluated(
        "philly-loss",
        RESULTS_MD,
        ("dgx8x8",),
        f"--cluster dgx8x8 --trace runs/figures/philly.csv --seeds 1 --policies {LOSS} {LEARNED}",
        before=(PHILLY_IMPORT,),
    ),
    evaluated(
        "philly-queue",
        RESULTS_MD,
        ("dgx8x8",),
        f"--cluster dgx8x8 --trace runs/figures/philly.csv --seeds 1 --queue edf-bf --policies {TRACE_QUEUE} {LEARNED}",
        before=(PHILLY_IMPORT,),
    ),
    *(trace_families(vc, start, RESULTS_MD) for vc, start in PHILLY_WINDOWS.items()),
    elastic_figure("elastic-regimes", ELASTIC_MD, {label: REGIME_RUNS[label] for label in ELASTIC_REGIMES}, REGIMES, BLEND_QUIET),
    Figure(  # ElasticFlow's headline in its own terms: deadline jobs of its traces' lengths, admitted or dropped at once
        "elasticflow-admission",
        ELASTIC_MD,
        ("dgx8x8",),
        (Step(f"placer evaluate {ELASTIC_ADMISSION} --policies {','.join(ADMITTED)} --out runs/figures/elasticflow-admission"),),
        admission_table("results.json"),
        keep={"results.json": "runs/figures/elasticflow-admission/results.json"},
    ),
    Figure(
        "queue-dgx8x8",
        LEARNING_LOG,
        ("dgx8x8",),
        tuple(
            Step(f"placer evaluate --cluster dgx8x8 {QUEUE} --policies {policies} {LEARNED} --out runs/figures/queue-dgx8x8{suffix}")
            for policies, suffix in ((QUEUE_POLICIES, ""), (LOOKAHEAD, "-lookahead"), (HINDSIGHT, "-hindsight"))
        ),
        evaluation(
            "results.json",
            "lookahead.json",
            "hindsight.json",
            against="lean:admit=0.9",
            image="experiments/blocking_rate_queue_dgx8x8.png",
            alt="blocking rate with a queue on dgx8x8",
        ),
        keep={f"{name}.json": f"runs/figures/queue-dgx8x8{suffix}/results.json" for name, suffix in PLANNERS},
    ),
    evaluated(
        "queue-mixed",
        LEARNING_LOG,
        ("mixed",),
        f"--cluster mixed {QUEUE} --policies {QUEUE_POLICIES} {LEARNED}",
        against="lean:admit=0.9",
        image="experiments/blocking_rate_queue_mixed.png",
        alt="blocking rate with a queue on the unseen mixed cluster",
    ),
    evaluated(
        "heldout-queue",
        LEARNING_LOG,
        ("dgx8x8",),
        f"--cluster dgx8x8 {HELD_OUT} {QUEUE.replace('--seeds 5', '--seeds 3')} --policies {TRACE_QUEUE} {LEARNED}",
        against="lean:admit=0.9",
    ),
    # the README's summary of the families figures below: no commands of its own, it reads their result files
    _summary(  # with the shipped `learned` (blend-quiet) on the same streams, beside its predecessor and PAC-ML's clone
        "readme-regimes",
        "README.md",
        ("dgx8x8", "mixed", "dgxh100"),
        {
            label: (f"{name}/results.json", f"blend-quiet-figures/{slug(label)}.json", *field_files("elastic-regimes", label))
            for label, (name, _, _) in REGIME_RUNS.items()
        },
        only=(*SHIPPED_BESIDE, *FIELD),
        wide=True,
    ),
    *(
        evaluated(name, LEARNING_LOG, (cluster,), f"--cluster {cluster} {REGIMES}{extra} --policies {FAMILIES}", **AGAINST_SINGLE_BEST)
        for name, cluster, extra in REGIME_RUNS.values()
    ),
    # blocking against completion time on the README's four regimes: no commands of its own, it reads their result files
    Figure(
        "tradeoff-jct",
        LEARNING_LOG,
        ("dgx8x8", "mixed"),
        (),
        tradeoff(TRADEOFF_RUNS, "docs/tradeoff_jct.png"),
        reads=tuple(TRADEOFF_RUNS.values()),
    ),
    # the load gate's threshold, chosen on streams apart from every figure's; then the shipped policy on 10 such seeds
    _apart("guard-tuning", GATES, seeds=3, least=True),
    _apart("regimes-apart", "single-best,best,adaptive,learned:default", seeds=10),
    _apart("gate-slack", "best,learned:default:last=1.5,learned:default:last=3", seeds=3, least=True, beside="guard-tuning"),
    Figure(  # the state at the holds a gate could read (seeds 200-203, apart from every other figure's)
        "hold-states",
        LEARNING_LOG,
        ("dgx8x8", "mixed"),
        (Step("python experiments/studies/hold_states.py", stdout="output.md"),),
        printed("output.md"),
    ),
    _apart("gate-waiting", WAITING_GATES, seeds=3, least=True, beside="guard-tuning"),
    Figure(  # what the holds are worth where every gate lost: the policy that never holds a job it can place
        "never-hold",
        LEARNING_LOG,
        ("dgx8x8", "mixed"),
        (Step(f"python {STUDIES}/overrides.py --by own --structure daily --load 0.5,0.9 {NEVER_HOLD_SEEDS}", stdout="output.md"),),
        printed("output.md"),
    ),
    _beside(  # PPO where the policy lost: chosen on these streams (seeds 100-109)...
        "targeted-apart", CANDIDATE, {label: (f"regimes-apart/{slug(label)}.json", *APART[label]) for label in APART}, first_seed=100
    ),
    _beside(  # ...and measured on the README's (seeds 0-9), the unseen cluster and the Philly trace's arrivals included
        "targeted-figures",
        CANDIDATE,
        {label: (f"{figure}/results.json", cluster, extra) for label, (figure, cluster, extra) in REGIME_RUNS.items()},
    ),
    _beside(  # a clone shown the members' decisions: on the streams apart (seeds 100-109)...
        "advised-apart", ADVISED, {label: (f"regimes-apart/{slug(label)}.json", *APART[label]) for label in APART}, first_seed=100
    ),
    _beside(  # ...and on the README's, the unseen cluster and the Philly trace's arrivals included
        "advised-figures",
        ADVISED,
        {label: (f"{figure}/results.json", cluster, extra) for label, (figure, cluster, extra) in REGIME_RUNS.items()},
    ),
    _beside(  # taught by the default where it blocked less in tuning, on the streams apart (seeds 100-109)...
        "blend-apart", BLEND, {label: (f"regimes-apart/{slug(label)}.json", *APART[label]) for label in APART}, first_seed=100
    ),
    _beside(  # with the margin chosen after blend-apart: judged on the README's streams (seeds 0-9), the unseen cluster and
        # the Philly trace's arrivals included
        "blend-margin-figures",
        BLEND_MARGIN,
        {label: (f"{figure}/results.json", cluster, extra) for label, (figure, cluster, extra) in REGIME_RUNS.items()},
    ),
    _beside(  # more of the quiet end in training: the same streams as blend-margin-figures
        "blend-quiet-figures",
        BLEND_QUIET,
        {label: (f"{figure}/results.json", cluster, extra) for label, (figure, cluster, extra) in REGIME_RUNS.items()},
        also=(("blend-margin-figures", BLEND_MARGIN),),
    ),
    evaluated(  # ...and in PAC-ML's loss setting, against lean (issue 29's target there)
        "blend-pacml",
        LEARNING_LOG,
        ("pacml",),
        f"--cluster pacml {ABCD} {FIVE} --policies lean,learned:default,{BLEND} --workers 2",
        against="lean",
    ),
    _regime_figure(  # the shipped learned (blend-quiet) at loads no policy here was trained on, beside families-unseen-loads
        "blend-quiet-unseen-loads",
        BLEND_QUIET,
        {"dgx8x8, Poisson": ("dgx8x8", "")},
        REGIMES.replace("--load 0.5,0.9,1.3", "--load 0.6,1.0,1.4"),
        {"dgx8x8, Poisson": ("families-unseen-loads/results.json",)},
        least=True,
        only=SHIPPED_BESIDE,
    ),
    evaluated(  # blend-margin and blend-quiet (a quarter of its episodes there, blend-margin's half) in PAC-ML's loss setting
        "blend-quiet-pacml",
        LEARNING_LOG,
        ("pacml",),
        f"--cluster pacml {ABCD} {FIVE} --policies lean,learned:default,{BLEND_MARGIN},{BLEND_QUIET} --workers 2",
        against="lean",
    ),
    _summary(  # the families figures' seeds 0-9 and regimes-apart's 100-109 together: 80 paired streams a regime
        "regimes-pooled",
        LEARNING_LOG,
        ("dgx8x8", "mixed"),
        {label: (f"{REGIME_RUNS[label][0]}/results.json", f"regimes-apart/{slug(label)}.json") for label in APART},
        only=("single-best", "best", "adaptive", "learned:default"),
    ),
    evaluated(  # loads between and beyond those learned:regimes was trained on (0.5, 0.7, ..., 1.3)
        "families-unseen-loads",
        LEARNING_LOG,
        ("dgx8x8",),
        f"--cluster dgx8x8 {REGIMES.replace('--load 0.5,0.9,1.3', '--load 0.6,1.0,1.4')} "
        "--policies lean:admit=0.9,para_max,para_min+best_fit,single-best,best,adaptive,learned:pacml,learned:regimes,learned:clone,"
        "learned:default",
        **AGAINST_SINGLE_BEST,
    ),
    Figure(  # what a warm start's budget of decisions buys in episodes per regime
        "demonstration-steps",
        LEARNING_LOG,
        ("dgx8x8", "mixed", "pacml"),
        (Step("python experiments/studies/demonstration_steps.py", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(  # which of the learned policy's departures from best cost it jobs, where it blocks more than best
        "departures",
        LEARNING_LOG,
        ("mixed",),
        (Step("python experiments/studies/departures.py --cluster mixed --load 0.5", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(  # the same at load 0.9, where the learned policies block more than best on mixed: which jobs they hold
        "departures-busy",
        LEARNING_LOG,
        ("mixed",),
        (Step("python experiments/studies/departures.py --cluster mixed --load 0.9", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(  # the room in the learned policy's holds: each one best would place, placed as best does
        "overrides",
        LEARNING_LOG,
        ("dgx8x8", "mixed"),
        (Step("python experiments/studies/overrides.py", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(
        "fidelity-published",
        COST_MD,
        ("dgx8x8",),
        (Step("python experiments/studies/fidelity.py --no-gavel", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(
        "fidelity-gavel",
        COST_MD,
        ("testbeds/gavel_k80", "testbeds/gavel_p100", "testbeds/gavel_v100"),
        (Step("python experiments/studies/fidelity.py --gavel-only", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(  # why V100's held-out median stays near 19 %: its rows by model and shape
        "fidelity-gavel-shapes",
        COST_MD,
        ("testbeds/gavel_v100",),
        (Step("python experiments/studies/fidelity.py --gavel-shapes v100", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(
        "fidelity-extrapolation",
        COST_MD,
        ("testbeds/gavel_k80", "testbeds/gavel_p100", "testbeds/gavel_v100"),
        (Step("python experiments/studies/fidelity.py --extrapolation-only", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(
        "fidelity-testbed",
        COST_MD,
        ("testbeds/t4x16",),
        (Step("python experiments/studies/fidelity.py --testbed-only", stdout="output.md"),),
        printed("output.md"),
    ),
    Figure(  # the fit judged on a finer model than the one fitted (a DDP timeline); T4s: stale when their constants change
        "fidelity-timeline",
        COST_MD,
        ("testbeds/t4x16",),
        (Step("python experiments/studies/fidelity_timeline.py --json runs/figures/fidelity-timeline/timeline.json"),),
        timeline("timeline.json"),
        keep={"timeline.json": "runs/figures/fidelity-timeline/timeline.json"},
    ),
    Figure(
        "scaling-dgx8x8",
        COST_MD,
        ("dgx8x8",),
        (Step("python experiments/studies/scaling_plot.py --json runs/figures/scaling-dgx8x8/scaling.json"),),
        scaling("scaling.json", "docs/scaling_dgx8x8.png", "scaling efficiency, sipml against auto"),
        keep={"scaling.json": "runs/figures/scaling-dgx8x8/scaling.json"},
    ),
    Figure(
        "decisions",
        COST_MD,
        ("pacml", "dgx8x8"),
        (Step("python experiments/studies/decisions.py --seeds 2 --jobs 500", stdout="output.md"),),
        printed("output.md"),
    ),
)

SHIPPED_FIGURES = ("blend-quiet-figures", "blend-quiet-unseen-loads", "blend-quiet-pacml", "tradeoff-jct")
# the shipped policy's figures, shown in docs/learning.md; every other learning figure stays in the experiments' log
FIGURES: tuple[Figure, ...] = tuple(dataclasses.replace(f, document=LEARNING_MD) if f.name in SHIPPED_FIGURES else f for f in _REGISTERED)
# figure name -> its result folder: experiments/results/NAME for those only the experiments' log shows, else docs/results/NAME
FOLDERS = result_folders(FIGURES)

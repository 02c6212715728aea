"""PNG plots of an evaluation: metric bars per policy, utilisation over time, and per-job CDFs (JCT, wait, slowdown)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from placer.evaluate.jobs import JobSamples  # noqa: E402
from placer.evaluate.results import EvaluationResult  # noqa: E402
from placer.evaluate.stats import clipped_errors  # noqa: E402

RANGES = {"blocking_rate": (0.0, 1.0), "avoidable_blocking_rate": (0.0, 1.0), "utilization": (0.0, 1.0)}  # error bars stop at these
LABELS = {
    "blocking_rate": "blocking rate (fraction of jobs)",
    "avoidable_blocking_rate": "avoidable blocking (blocked among the jobs some policy could accept)",
    "throughput_jobs_per_hour": "completed jobs per hour",
}
LINESTYLES = ("-", "--", ":", "-.")


def policy_style(policy: str, policies: list[str]) -> dict:
    """One colour and line style per policy, the same in every panel and plot."""
    i = policies.index(policy) if policy in policies else 0
    return {"color": f"C{i % 10}", "ls": LINESTYLES[i % len(LINESTYLES)]}


def setting(result: EvaluationResult) -> str:
    """The evaluation's setting for a title: cluster, load or trace, queue and size spread."""
    c = result.config
    w = c.workload
    loads = c.load_values  # every load evaluated: a plot of them all (the per-job CDFs pool them) names them all
    source = f"trace {Path(c.trace).name}" if c.trace else f"load{'s' if len(loads) > 1 else ''} {', '.join(map(str, loads))}"
    return f"{c.cluster}, {source}, queue {w.queue[0]}, size {w.size[0]}, {c.strategy} cost model"


def plot_metric(result: EvaluationResult, metric: str, path: Path) -> Path:
    """Grouped bars: one group per beta distribution, one bar per policy, 95% error bars."""
    rows = result.summary()
    betas, policies = result.config.beta_labels, result.config.policies
    width = 0.8 / len(policies)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(betas) + 0.35 * len(policies) * len(betas)), 4.2))
    x = np.arange(len(betas))
    low, high = RANGES.get(metric, (-np.inf, np.inf))
    for j, policy in enumerate(policies):
        cells = [next(r for r in rows if r["beta_dist"] == b and r["policy"] == policy) for b in betas]
        means = [c[metric] for c in cells]
        ax.bar(
            x + (j - (len(policies) - 1) / 2) * width,
            means,
            width,
            yerr=clipped_errors(means, [c[f"{metric}_ci95"] for c in cells], low, high),
            capsize=2,
            label=policy,
            color=policy_style(policy, policies)["color"],
        )
    ax.set_xticks(x, [f"beta {b}" for b in betas])
    ax.set_ylabel(LABELS.get(metric, metric))
    seeds = result.config.seeds
    ax.set_title(
        f"{LABELS.get(metric, metric)}: {setting(result)}\n"
        f"mean over {seeds} seed{'s' if seeds > 1 else ''}; error bars: 95% interval over seeds",
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="policy", title_fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(bottom=0)  # the metrics are non-negative; a wide interval may reach below 0
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def _first_seed(result: EvaluationResult) -> str:
    """``seed 0 of 10``, or ``seed 100 of 100-109``."""
    first, seeds = result.config.first_seed, result.config.seeds
    return f"seed 0 of {seeds}" if first == 0 else f"seed {first} of {first}-{first + seeds - 1}"


def plot_blocking_over_time(result: EvaluationResult, path: Path) -> Path:
    """Blocked fraction of the arrivals in each time span, the first seed, one panel per beta distribution (or the trace)."""
    betas = result.config.beta_labels
    fig, axes = plt.subplots(len(betas), 1, figsize=(9, 2.2 * len(betas) + 1.0), squeeze=False)
    for ax, beta in zip(axes[:, 0], betas, strict=True):
        lines = [
            {"policy": t["policy"], "time_s": t["blocking_time_s"], "busy": t["blocking"]}
            for t in result.timelines
            if t["beta_dist"] == beta and t["seed"] == result.config.first_seed and "blocking" in t
        ]
        for label, line in coinciding(lines):
            y = np.array([np.nan if v is None else v for v in line["busy"]], dtype=float)
            style = policy_style(line["policy"], result.config.policies)
            ax.plot(np.asarray(line["time_s"]) / 3600, y, lw=1.0, marker=".", label=label, **style)
        ax.set_ylabel(f"blocked fraction\n{'trace' if beta == 'trace' else 'beta ' + beta}", fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel("simulated time (hours); each point: arrivals in one of 40 equal spans")
    fig.suptitle(f"blocking over time: {setting(result)}, seed {result.config.first_seed}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def coinciding(lines: list[dict]) -> list[tuple[str, dict]]:
    """Timelines merged where identical: (policies joined by " = ", one of the lines), in first-seen order."""
    groups: dict[tuple, list[dict]] = {}
    for line in lines:
        groups.setdefault((tuple(line["time_s"]), tuple(line["busy"])), []).append(line)
    return [(" = ".join(line["policy"] for line in same), same[0]) for same in groups.values()]


def _devices(result: EvaluationResult) -> int:
    from placer.cluster.topology import load_cluster

    return load_cluster(result.config.cluster).num_devices


def plot_utilization(result: EvaluationResult, path: Path) -> Path:
    """Busy-device fraction over time for the first seed, one panel per beta distribution.

    Policies whose lines coincide (identical decisions) are drawn once and named together; the
    others differ in colour and line style, so no line hides another unannounced.
    """
    betas = result.config.beta_labels
    fig, axes = plt.subplots(len(betas), 1, figsize=(9, 2.2 * len(betas) + 1.0), sharex=False, squeeze=False)
    for ax, beta in zip(axes[:, 0], betas, strict=True):
        lines = [line for line in result.timelines if line["beta_dist"] == beta and line["seed"] == result.config.first_seed]
        for label, line in coinciding(lines):
            style = policy_style(line["policy"], result.config.policies)
            ax.plot(np.asarray(line["time_s"]) / 3600, line["busy"], lw=1.0, label=label, **style)
        ax.set_ylabel(f"busy devices\n(fraction), beta {beta}", fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel("simulated time (hours)")
    fig.suptitle(
        f"devices busy over time: {setting(result)}, {_first_seed(result)} ({result.config.cluster} has {_devices(result)} devices)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


CDF_POINTS = 4000  # a policy's CDF drawn through at most this many quantiles (a large evaluation has millions of jobs)
CDF_PANELS = {"jct_s": ("JCT (s, start to finish)", "log"), "wait_s": ("wait (s, arrival to start)", "symlog"), "slowdown": (
    "slowdown ((wait + JCT) / fastest JCT on the idle cluster)",
    "log",
)}  # fmt: skip


def plot_job_cdfs(result: EvaluationResult, samples: JobSamples, path: Path) -> Path:
    """Per policy, the CDF of JCT, wait and slowdown over its completed jobs (every run pooled): one panel each."""
    policies = result.config.policies
    fig, axes = plt.subplots(1, len(CDF_PANELS), figsize=(5.0 * len(CDF_PANELS), 4.2), squeeze=False)
    for ax, (metric, (label, scale)) in zip(axes[0], CDF_PANELS.items(), strict=True):
        lowest, highest = np.inf, 0.0
        for policy in samples.values:
            values = samples.array(policy, metric)
            values = np.sort(values[~np.isnan(values)])
            if not len(values):
                continue
            lowest, highest = min(lowest, values[0]), max(highest, values[-1])
            shares = np.arange(1, len(values) + 1) / len(values)
            if len(values) > CDF_POINTS:
                shares = np.linspace(0, 1, CDF_POINTS + 1)
                values = np.quantile(values, shares)
            line = f"{policy} ({samples.completed(policy):,})"
            ax.step(np.r_[values[0], values], np.r_[0.0, shares], where="post", lw=1.2, label=line, **policy_style(policy, policies))
        if scale == "symlog":
            ax.set_xscale("symlog", linthresh=1.0)  # waits of 0 (served at once) stay on the axis
            ax.set_xlim(0, max(highest * 1.05, 1.0))
        elif lowest > 0 and np.isfinite(lowest):
            ax.set_xscale(scale)
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 10, 20, 50, 100 ...: read at a glance
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("share of completed jobs")
    if axes[0, -1].get_legend_handles_labels()[0]:  # no policy completed a job: no curve to name
        axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="policy (completed jobs)", title_fontsize=7)
    seeds = result.config.seeds
    fig.suptitle(f"per-job CDFs: {setting(result)}, {seeds} seed{'s' if seeds > 1 else ''} pooled", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def at_load(result: EvaluationResult, load: float) -> EvaluationResult:
    """The part of a multi-load evaluation run at ``load``, as an evaluation of that load alone."""
    config = result.config.model_copy(update={"loads": (), "workload": result.config.workload_at(result.config.load_values.index(load))})
    runs = [r for r in result.runs if r.get("load") == load]
    return EvaluationResult(config, runs, [t for t in result.timelines if t.get("load") == load])


def plot_all(result: EvaluationResult, out: Path) -> list[Path]:
    """Bar plots of blocking (raw and avoidable, where recorded) and throughput, and the utilisation plot when timelines
    are present; with several loads, one set per load (``load0.9_blocking_rate.png`` ...)."""
    if len(result.config.load_values) > 1:
        return [path for load in result.config.load_values for path in _plot_one_load(at_load(result, load), out, f"load{load}_")]
    return _plot_one_load(result, out)


PLOT_NAMES = ("blocking_rate", "throughput", "avoidable_blocking_rate", "utilization", "blocking_over_time")


def stale_plots(out: Path, written: list[Path]) -> list[Path]:
    """The plots of an earlier evaluation in ``out`` that :func:`plot_all` did not write this time (another set of loads,
    or one load where there were several): named as it names plots, not among ``written``."""
    names = {f"{name}.png" for name in PLOT_NAMES}
    plots = [p for p in out.glob("*.png") if p.name in names or (p.name.startswith("load") and p.name.partition("_")[2] in names)]
    return sorted(set(plots) - set(written))


def _plot_one_load(result: EvaluationResult, out: Path, prefix: str = "") -> list[Path]:
    paths = [
        plot_metric(result, "blocking_rate", out / f"{prefix}blocking_rate.png"),
        plot_metric(result, "throughput_jobs_per_hour", out / f"{prefix}throughput.png"),
    ]
    if all("avoidable_blocking_rate" in r for r in result.runs):
        paths.append(plot_metric(result, "avoidable_blocking_rate", out / f"{prefix}avoidable_blocking_rate.png"))
    if result.timelines:
        paths.append(plot_utilization(result, out / f"{prefix}utilization.png"))
    if any("blocking" in t for t in result.timelines):
        paths.append(plot_blocking_over_time(result, out / f"{prefix}blocking_over_time.png"))
    return paths

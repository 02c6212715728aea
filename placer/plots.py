"""PNG plots of an evaluation: metric bars per policy and utilisation over time."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from placer.evaluation import EvaluationResult  # noqa: E402

LABELS = {"blocking_rate": "blocking rate", "throughput_jobs_per_hour": "completed jobs per hour"}


def plot_metric(result: EvaluationResult, metric: str, path: Path) -> Path:
    """Grouped bars: one group per beta distribution, one bar per policy, 95% error bars."""
    rows = result.summary()
    betas, policies = result.config.beta_dists, result.config.policies
    width = 0.8 / len(policies)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(betas) + 0.35 * len(policies) * len(betas)), 4.2))
    x = np.arange(len(betas))
    for j, policy in enumerate(policies):
        cells = [next(r for r in rows if r["beta_dist"] == b and r["policy"] == policy) for b in betas]
        ax.bar(
            x + (j - (len(policies) - 1) / 2) * width,
            [c[metric] for c in cells],
            width,
            yerr=[c[f"{metric}_ci95"] for c in cells],
            capsize=2,
            label=policy,
        )
    ax.set_xticks(x, [f"beta {b}" for b in betas])
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.set_title(f"{LABELS.get(metric, metric)} ({result.config.cluster}, load {result.config.load})")
    ax.legend(fontsize=7, ncols=2, loc="best")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_utilization(result: EvaluationResult, path: Path) -> Path:
    """Busy-device fraction over time for seed 0, one panel per beta distribution."""
    betas = result.config.beta_dists
    fig, axes = plt.subplots(len(betas), 1, figsize=(8, 2.2 * len(betas) + 0.6), sharex=False, squeeze=False)
    for ax, beta in zip(axes[:, 0], betas, strict=True):
        for line in result.timelines:
            if line["beta_dist"] == beta and line["seed"] == 0:
                ax.plot(np.asarray(line["time_s"]) / 3600, line["busy"], lw=0.9, label=line["policy"])
        ax.set_ylabel(f"busy (beta {beta})")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (hours)")
    axes[0, 0].legend(fontsize=7, ncols=3, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_all(result: EvaluationResult, out: Path) -> list[Path]:
    return [
        plot_metric(result, "blocking_rate", out / "blocking_rate.png"),
        plot_metric(result, "throughput_jobs_per_hour", out / "throughput.png"),
        plot_utilization(result, out / "utilization.png"),
    ]

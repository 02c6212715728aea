"""The cost model against published measurements, and calibration on Gavel's measured throughputs.

    python experiments/studies/fidelity.py            # both tables and the calibration timing
    python experiments/studies/fidelity.py --no-gavel # the published rows only
    python experiments/studies/fidelity.py --gavel-only # the Gavel table only (no timing)
    python experiments/studies/fidelity.py --gavel-shapes v100 # one GPU type's rows by model and placement shape
    python experiments/studies/fidelity.py --smoke    # the published rows and one Gavel GPU type, nothing timed

First table: each published figure, its source, placer's prediction and the relative error
(calibration rows are marked: they were fitted, not predicted; see :mod:`placer.cost.fidelity`).
Second: per Gavel GPU type and placement kind, the median / 90th-percentile relative error of
held-out step times with the nominal cluster file and after ``placer calibrate`` on at most four
rows per model (:mod:`placer.calibration.gavel` states the subset). Third: Gavel extrapolation,
calibrated on every row on one server or spread over 2 servers, predicting the rows spread over 4
and 8. Fourth: the synthetic T4 testbed (:mod:`placer.calibration.testbed`: truth set, calibrated
on 4 placements per model of at most 2 servers, predicted up to 16 servers), at its 3 % noise and
at 10 % over four seeds. Last: seconds to calibrate 100 rows, against the 10 s target.
"""

from __future__ import annotations

import sys
import time

from placer.cost.fidelity import fidelity_rows

CALIBRATE_TARGET_S = 10.0


def published() -> None:
    print("| measurement | published | source | placer | error |")
    print("|---|---:|---|---:|---:|")
    for row in fidelity_rows():
        mark = " (calibration)" if row["calibrated"] else ""
        predicted = f"{row['predicted']:.0f}" if row["predicted"] >= 100 else f"{row['predicted']:.3g}"
        print(f"| {row['what']}{mark} | {row['published']:g} | {row['source']} | {predicted} | {row['error']:+.1%} |")


def gavel(gpu_types: tuple[str, ...] | None = None) -> None:
    from placer.calibration.gavel import GPU_TYPES, validate_on_gavel

    print("| GPU | placements | held-out rows | nominal median / p90 | calibrated median / p90 | calibrated on |")
    print("|---|---|---:|---:|---:|---:|")
    for gpu in gpu_types or GPU_TYPES:
        validation = validate_on_gavel(gpu)
        for kind in ("all", "single", "packed", "spread"):
            s = validation.summary(kind)
            label = {"all": "all", "single": "1 GPU", "packed": "2-8 GPUs, packed", "spread": "2-8 GPUs, one per server"}[kind]
            print(
                f"| {gpu.upper()} | {label} | {s['rows']} | {s['nominal_median']:.1%} / {s['nominal_p90']:.1%} "
                f"| {s['median']:.1%} / {s['p90']:.1%} | {validation.calibration.rows} rows |"
            )


def shapes(gpu: str) -> None:
    """Per model and placement shape of ``gpu``'s rows: the measured step time over the same model's on 1 GPU at the same
    per-GPU batch (median over batches), and the calibrated model's median error on the held-out rows of that shape."""
    from collections import defaultdict
    from statistics import median

    from placer.calibration.gavel import gavel_rows, validate_on_gavel

    rows, validation = gavel_rows(gpu), validate_on_gavel(gpu)
    single = {(r.model, r.batch_size): r.step_time_s for r in rows if r.gpus == 1}
    ratios, errors = defaultdict(list), defaultdict(list)
    for r in rows:
        if r.gpus > 1 and (r.model, r.batch_size) in single:
            ratios[(r.model, r.kind, r.gpus)].append(r.step_time_s / single[(r.model, r.batch_size)])
    for r, error in zip(validation.held_out, validation.calibrated_errors, strict=True):
        errors[(r.model, r.kind, r.gpus)].append(abs(error))
    head = "GPUs on one server: step / 1 GPU's | calibrated error | one per server: step / 1 GPU's | calibrated error"
    print(f"| {gpu.upper()} model | {head} |")
    print("|---|---|---|---|---|")
    for model in dict.fromkeys(m for m, _, _ in ratios):
        cells = [model]
        for kind in ("packed", "spread"):
            keys = [(model, kind, g) for g in (2, 4, 8) if (model, kind, g) in ratios]
            cells.append(", ".join(f"{k[2]}: {median(ratios[k]):.2f}x" for k in keys))
            cells.append(", ".join(f"{k[2]}: {median(errors[k]):.0%}" if errors[k] else f"{k[2]}: fitted" for k in keys))
        print("| " + " | ".join(cells) + " |")


def extrapolation() -> None:
    from placer.calibration.gavel import GPU_TYPES, validate_extrapolation

    print("\n| GPU | calibrated on | predicted | nominal median / p90 | calibrated median / p90 |")
    print("|---|---:|---:|---:|---:|")
    for gpu in GPU_TYPES:
        v = validate_extrapolation(gpu)
        s = v.summary()
        print(
            f"| {gpu.upper()} | {v.calibration.rows} rows, 1-2 servers | {s['rows']} rows, 4-8 servers "
            f"| {s['nominal_median']:.1%} / {s['nominal_p90']:.1%} | {s['median']:.1%} / {s['p90']:.1%} |"
        )


def testbed() -> None:
    from placer.calibration import testbed as tb

    print("\n| testbed noise | seed | held-out rows | nominal median / p90 | calibrated median / p90 / max | inter-server B/s, latency |")
    print("|---:|---:|---:|---:|---:|---|")
    for noise, seeds in ((tb.NOISE, (tb.SEED,)), (0.10, range(4))):
        for seed in seeds:
            v = tb.validate_on_testbed(seed=seed, noise=noise)
            s, f = v.summary(), v.calibration.fitted
            bw, lat = f["links.inter_server.bandwidth_Bps"][1], f.get("links.inter_server.latency_s", (0, float("nan")))[1]
            print(
                f"| {noise:.0%} | {seed} | {s['rows']} | {s['nominal_median']:.1%} / {s['nominal_p90']:.1%} "
                f"| {s['median']:.1%} / {s['p90']:.1%} / {s['max']:.1%} | {bw:.3g}, {lat * 1e6:.0f} us |"
            )


def calibration_speed() -> None:
    from placer.calibration import fit_calibration
    from placer.calibration.gavel import gavel_cluster, gavel_rows

    cluster = gavel_cluster("p100")
    rows = [r.measurement(cluster) for r in gavel_rows("p100")[:100]]
    start = time.perf_counter()
    fit_calibration(cluster, rows)
    seconds = time.perf_counter() - start
    verdict = "within" if seconds <= CALIBRATE_TARGET_S else "over"
    what = "calibrate, 100 Gavel P100 rows, cross-validated by placement shape"
    print(f"\n{what}: {seconds:.1f} s ({verdict} the {CALIBRATE_TARGET_S:g} s target)")


def main() -> None:
    args = sys.argv[1:]
    only = {"--gavel-only": gavel, "--extrapolation-only": extrapolation, "--testbed-only": testbed}
    for flag, table in only.items():
        if flag in args:
            table()
            return
    if "--gavel-shapes" in args:
        shapes(args[args.index("--gavel-shapes") + 1])
        return
    published()
    if "--smoke" in args:
        print()
        gavel(("k80",))
    elif "--no-gavel" not in args:
        print()
        gavel()
        extrapolation()
        testbed()
        calibration_speed()


if __name__ == "__main__":
    main()

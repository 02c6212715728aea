"""The cost model against published measurements, as a markdown table.

    python benchmarks/fidelity.py

Each row: the published figure, its source, placer's prediction and the relative error
(calibration rows are marked: they were fitted, not predicted). See :mod:`placer.cost.fidelity`.
"""

from __future__ import annotations

from placer.cost.fidelity import fidelity_rows


def main() -> None:
    print("| measurement | published | source | placer | error |")
    print("|---|---:|---|---:|---:|")
    for row in fidelity_rows():
        mark = " (calibration)" if row["calibrated"] else ""
        predicted = f"{row['predicted']:.0f}" if row["predicted"] >= 100 else f"{row['predicted']:.3g}"
        print(f"| {row['what']}{mark} | {row['published']:g} | {row['source']} | {predicted} | {row['error']:+.1%} |")


if __name__ == "__main__":
    main()

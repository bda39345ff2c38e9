"""Start-up: ``import attnwidget`` against ``import torch, transformers``, fresh processes.

Each repeat starts two fresh interpreters, one per statement, in alternating
order (so neither always runs on a warmer disk cache), and each child times
its own import with ``time.perf_counter`` (the interpreter's start, equal for
both, is left out, which makes the ratio stricter). One unmeasured round
first warms the file cache. The goal: the median of ``import attnwidget`` is at
most 1.2× the median of ``import torch, transformers``.

    .venv/bin/python bench/startup.py [--repeats 7] [--goal 1.2]

Exits with status 1 when the ratio is above the goal (``--check``), so a CI
step can hold the line; without ``--check`` it only prints.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

STATEMENTS = {
    "torch+transformers": "import torch, transformers",
    "attnwidget": "import attnwidget",
}

_CHILD = "import time\nt = time.perf_counter()\n{statement}\nprint(repr(time.perf_counter() - t))\n"


def time_import(statement: str) -> float:
    """Seconds one fresh interpreter takes to run ``statement`` (timed inside the child)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(statement=statement)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"`{statement}` failed in a fresh process:\n{done.stderr}")
    return float(done.stdout.strip().splitlines()[-1])


def measure(repeats: int) -> dict[str, list[float]]:
    """``repeats`` timings of each statement, each in its own fresh process."""
    names = list(STATEMENTS)
    for name in names:  # warm the file cache; not counted
        time_import(STATEMENTS[name])
    times: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(repeats):
        order = names if repeat % 2 == 0 else names[::-1]
        for name in order:
            times[name].append(time_import(STATEMENTS[name]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--goal", type=float, default=1.2)
    parser.add_argument("--check", action="store_true", help="exit 1 above the goal")
    args = parser.parse_args()

    times = measure(args.repeats)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        spread = ", ".join(f"{v:.2f}" for v in values)
        print(f"{STATEMENTS[name]:<28} median {medians[name]:.2f} s  ({spread})")
    ratio = medians["attnwidget"] / medians["torch+transformers"]
    verdict = "meets" if ratio <= args.goal else "MISSES"
    print(f"ratio {ratio:.2f}x, goal <= {args.goal:.1f}x: {verdict} the goal")
    if args.check and ratio > args.goal:
        sys.exit(1)


if __name__ == "__main__":
    main()

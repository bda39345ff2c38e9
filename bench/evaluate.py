"""Data-set evaluation speed: locally, and on Dask with 1 and 2 one-thread workers.

Run: ``python bench/evaluate.py [--n 2000] [--seed 0] [--batch-size 16]``.

:func:`attnwidget.evaluate` runs the demo encoder (``sva-encoder``) on ``n``
held-out sentences with attractors (``demo.sentences(n, seed=seed)``), with
the methods raw, rollout, grad_attention, input_x_gradient and blank_out and
every faithfulness metric (ERASER's comprehensiveness and sufficiency AOPC,
DeYoung et al. 2020; Chefer, Gur & Wolf's 2021 perturbation AUCs, on "the
prediction is kept" and on the class probability). It runs three times:

* ``local``: in this process (torch on one thread, as every worker runs);
* ``dask 1``: a ``LocalCluster(n_workers=1, threads_per_worker=1,
  dashboard_address=None)`` started as ``executor="dask"`` starts it
  (:func:`attnwidget.evaluation.executors.local_cluster`), its client passed
  as ``executor=``;
* ``dask 2``: the same with two workers.

The times are of ``evaluate`` alone (the model shipped to the workers and
the summary's bootstrap included; the clusters' start-up is printed apart,
as it is paid once per session); ``--repeat k`` keeps the best of k runs.
It prints examples per second, the CPU seconds all processes spent (this
one's and the workers'; on a busy machine the wall time says how much CPU
the run got, the CPU time how much work it was), the 2-worker speed-up over
1 worker (the goal on 2 cores: at least 1.6×), whether the three runs give
identical per-example DataFrames (they must: the same chunks, computed the
same way), and the summary table. The 1-minute load average at each start
shows other work on the machine, which the speed-up cannot tell apart.

The ``if __name__ == "__main__"`` guard matters: Dask's worker processes are
spawned and import this file again.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import pandas as pd

from attnwidget import demo
from attnwidget.evaluation import FAITHFULNESS, evaluate
from attnwidget.evaluation.executors import local_cluster

METHODS = ["raw", "rollout", "grad_attention", "input_x_gradient", "blank_out"]


def worker_cpu() -> float:
    """CPU seconds this process has used (run on each worker with ``client.run``)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(model, tokenizer, texts, batch_size, executor, client=None):
    """(result, wall seconds, CPU seconds of this process and the workers, load average)."""
    load = os.getloadavg()[0]
    workers = client.run(worker_cpu) if client is not None else {}
    cpu, start = time.process_time(), time.perf_counter()
    result = evaluate(
        model,
        tokenizer,
        texts,
        methods=METHODS,
        metrics=list(FAITHFULNESS),
        batch_size=batch_size,
        executor=executor,
        progress=False,
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    if client is not None:
        cpu += sum(client.run(worker_cpu).values()) - sum(workers.values())
    return result, wall, cpu, load


def on_cluster(workers, model, tokenizer, texts, batch_size, repeat):
    """The best of ``repeat`` runs on a fresh cluster of ``workers``, and its start-up time."""
    from dask.distributed import Client

    start = time.perf_counter()
    with local_cluster(workers) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        startup = time.perf_counter() - start
        env = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        runs = [run(model, tokenizer, texts, batch_size, client, client) for _ in range(repeat)]
    return (*min(runs, key=lambda r: r[1]), startup, sorted(set(env.values()), key=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=1, help="runs per executor (best kept)")
    args = parser.parse_args()
    model, tokenizer = demo.load("sva-encoder")
    texts = [s.text for s in demo.sentences(args.n, seed=args.seed)]
    print(f"# attnwidget.evaluate: {args.n} sentences, sva-encoder, {os.cpu_count()} cores")
    print(f"methods: {', '.join(METHODS)}; metrics: {', '.join(FAITHFULNESS)}")
    print(f"batch_size {args.batch_size} ({-(-args.n // args.batch_size)} chunks), ", end="")
    print(f"best of {args.repeat} run(s) each\n")
    local = min(
        (run(model, tokenizer, texts, args.batch_size, "local") for _ in range(args.repeat)),
        key=lambda r: r[1],
    )
    one = on_cluster(1, model, tokenizer, texts, args.batch_size, args.repeat)
    two = on_cluster(2, model, tokenizer, texts, args.batch_size, args.repeat)
    print(
        "| executor | seconds | examples/s | CPU s (all processes) | examples per CPU s |", end=""
    )
    print(" cluster start-up (s) | load avg at start |")
    print("|---|---|---|---|---|---|---|")
    for name, (_, wall, cpu, load, *up) in zip(
        ("local", "dask, 1 worker", "dask, 2 workers"), (local, one, two), strict=True
    ):
        startup = f"{up[0]:.1f}" if up else "–"
        print(
            f"| {name} | {wall:.1f} | {args.n / wall:.1f} | {cpu:.1f} | {args.n / cpu:.1f} "
            f"| {startup} | {load:.1f} |"
        )
    print(f"\nspeed-up, 2 workers / 1 worker: {one[1] / two[1]:.2f}× (goal ≥ 1.6×)")
    print(f"workers' MALLOC_TRIM_THRESHOLD_: {one[-1]} / {two[-1]}")
    identical = []
    for name, (other, *_) in (("dask 1", one), ("dask 2", two)):
        try:
            pd.testing.assert_frame_equal(other.per_example, local[0].per_example, check_exact=True)
            pd.testing.assert_frame_equal(other.summary, local[0].summary, check_exact=True)
            identical.append(f"{name}: identical")
        except AssertionError as error:
            identical.append(f"{name}: DIFFERENT ({str(error).splitlines()[0]})")
    print("numbers vs local: " + "; ".join(identical) + "\n")
    print("mean [95 % bootstrap interval] over the sentences:\n")
    print("| method | " + " | ".join(FAITHFULNESS) + " |")
    print("|---" * (len(FAITHFULNESS) + 1) + "|")
    for method in METHODS:
        cells = [local[0].summary.loc[(method, metric)] for metric in FAITHFULNESS]
        text = [f"{c['mean']:.4g} [{c['low']:.4g}, {c['high']:.4g}]" for c in cells]
        print(f"| `{method}` | " + " | ".join(text) + " |")


if __name__ == "__main__":
    main()

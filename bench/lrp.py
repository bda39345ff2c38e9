"""Cost of "lrp" and "chefer2021" relative to one plain forward+backward pass.

Run: ``python bench/lrp.py`` (options: ``--n 128 --repeats 9 --threads 1``).
Models: the synthetic 6-layer, hidden-256, 8-head BERT classifier and GPT-2 LM
of ``bench/explain.py``, input of n tokens.

Time. Reference: a plain forward of the stock model (eval mode) and
``logit.backward()`` (parameters require grad, as by default). Cases:

* ``LRP pass``: the AttnLRP pass alone (rules installed, one forward and one
  backward to the embeddings and attention maps, arrays to numpy, rules
  removed): what "lrp" adds to a capture;
* ``explain(lrp)``, ``explain(chefer2021)``, ``explain(both)``: the whole
  call, i.e. the capture pass plus the LRP pass plus the scores;
  "chefer2021" runs the paper's own rules (its own pass, so ``both`` is two
  passes);
* ``paper-rules pass``: the pass of Chefer, Gur & Wolf's rules alone
  (:func:`attnwidget.relevance.chefer.chefer_rules`), what "chefer2021"
  adds to a capture; ``chefer2021(attnlrp)``: "chefer2021" with
  ``relevance="attnlrp"`` (AttnLRP's pass instead, shared with "lrp").

After one warm-up, the cases run round-robin ``--repeats`` times (so a change
in machine load hits all of them alike); printed: the median time, its ratio
to the reference's median, and the ratio of the minima (the least disturbed
runs). numpy's OpenBLAS gets the same number of threads as torch: with its
default (all cores), on a busy shared machine its threads stalled the small
n×n matrix products of chefer2021 (and rollout) by up to 100×.

Memory. Each case runs once in a fresh process (``spawn``) where only the
model and the input exist (glibc's mmap threshold lowered so freed tensors
go back to the system); a thread samples the resident set size every
millisecond, and the figure is the peak minus the size just before the call,
in MiB: the extra memory the call needs at its peak, tensors and arrays alike.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path


def _threads_from_argv() -> str:
    if "--threads" in sys.argv:
        return sys.argv[sys.argv.index("--threads") + 1]
    return "1"


# numpy's OpenBLAS gets the same thread count as torch, set before numpy loads:
# with its default (all cores) on a busy shared machine, its threads stalled
# the small n×n products of chefer2021 (and rollout) by up to 100×.
os.environ.setdefault("OPENBLAS_NUM_THREADS", _threads_from_argv())

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from explain import cases, plain_forward_backward  # noqa: E402

import attnwidget  # noqa: E402
from attnwidget.capture.record import ModelCall  # noqa: E402
from attnwidget.relevance.chefer import chefer_rules  # noqa: E402
from attnwidget.relevance.lrp import lrp_rules  # noqa: E402
from attnwidget.relevance.rerun import TargetScore  # noqa: E402


def workloads(model, tokenizer, text: str) -> dict[str, Callable[[], object]]:
    inputs = dict(tokenizer(text, return_tensors="pt"))
    model.eval()
    with torch.no_grad():
        logits = model(**inputs).logits
    causal = logits.ndim == 3
    row = inputs["input_ids"].shape[1] - 1 if causal else 0
    target = int((logits[0, row] if causal else logits[0]).argmax())
    runner = TargetScore(
        ModelCall(
            model,
            "causal-lm" if causal else "encoder",
            {"attention_mask": torch.ones_like(inputs["input_ids"])},
            row,
            target,
            inputs["input_ids"][0].tolist(),
        )
    )
    return {
        "plain fwd+bwd": lambda: plain_forward_backward(model, inputs, row, target),
        "LRP pass": lambda: runner.rerun(lrp_rules),
        "explain(lrp)": lambda: attnwidget.explain(model, tokenizer, text, methods=["lrp"]),
        "explain(chefer2021)": lambda: attnwidget.explain(
            model, tokenizer, text, methods=["chefer2021"]
        ),
        "explain(both)": lambda: attnwidget.explain(
            model, tokenizer, text, methods=["lrp", "chefer2021"]
        ),
        "paper-rules pass": lambda: runner.rerun(chefer_rules),
        "chefer2021(attnlrp)": lambda: attnwidget.explain(
            model,
            tokenizer,
            text,
            methods=["chefer2021"],
            method_options={"chefer2021": {"relevance": "attnlrp"}},
        ),
    }


def interleaved_times(work: dict[str, Callable[[], object]], repeats: int) -> dict[str, list]:
    for fn in work.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(repeats):
        for name, fn in work.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def _rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_child(index: int, name: str, n: int, threads: int, queue) -> None:
    torch.set_num_threads(threads)
    _, model, tokenizer, text = cases(n)[index]
    work = workloads(model, tokenizer, text)[name]
    peak, running = [0], [True]

    def sample() -> None:
        while running[0]:
            peak[0] = max(peak[0], _rss_bytes())
            time.sleep(0.001)

    before = _rss_bytes()
    sampler = threading.Thread(target=sample)
    sampler.start()
    work()
    running[0] = False
    sampler.join()
    peak[0] = max(peak[0], _rss_bytes())
    queue.put((peak[0] - before) / 2**20)


def peak_mib(index: int, name: str, n: int, threads: int) -> float:
    os.environ["MALLOC_MMAP_THRESHOLD_"] = "65536"  # inherited by the spawned child
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_peak_child, args=(index, name, n, threads, queue))
    process.start()
    value = queue.get(timeout=600)
    process.join()
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    found = cases(args.n)[:2]  # the two synthetic models
    print(f"torch and OpenBLAS threads: {args.threads}; n = {args.n}; {args.repeats} rounds")
    print(
        f"{'model':18s} {'case':20s} {'median':>9s} {'ratio':>6s} {'min ratio':>9s} "
        f"{'peak memory':>12s}"
    )
    for index, (name, model, tokenizer, text) in enumerate(found):
        times = interleaved_times(workloads(model, tokenizer, text), args.repeats)
        ref_median = statistics.median(times["plain fwd+bwd"])
        ref_min = min(times["plain fwd+bwd"])
        for what, values in times.items():
            median = statistics.median(values)
            memory = (
                "" if args.no_memory else f"{peak_mib(index, what, args.n, args.threads):7.1f} MiB"
            )
            print(
                f"{name:18s} {what:20s} {median * 1e3:6.1f} ms {median / ref_median:5.2f}x "
                f"{min(values) / ref_min:8.2f}x {memory:>12s}"
            )


if __name__ == "__main__":
    main()

"""Long inputs: peak memory and time of ``explain()`` against one plain forward+backward.

Run: ``python bench/long.py`` (CPU; ``--sizes 512 1024``, ``--threads 2``,
``--vocab 32000``); on a GPU ``python bench/long.py --device cuda --dtype bfloat16``.

The model is a tiny Llama-style decoder (``LlamaConfig``: 4 layers, 8 heads,
hidden 256, intermediate 688, random weights, seed 0) on ``n`` random word
tokens. Every figure comes from a fresh child process (``--child``), so one
measurement's allocations never hide another's:

* ``sdpa``: the plain forward with the model's default attention
  implementation (scaled-dot-product attention in transformers 5), then
  ``torch.autograd.grad`` of the predicted next token's logit with respect to
  the input embeddings (what every gradient explanation needs; parameters
  frozen, as :func:`attnwidget.explain` freezes them);
* ``eager``: the same with ``attn_implementation="eager"``, which
  materialises every (H, n, n) softmax (what any method reading attention
  probabilities needs);
* ``explain``: ``attnwidget.explain(model, tokenizer, text,
  methods=["raw", "rollout", "grad_attention", "input_x_gradient"])`` with
  the default ``keep`` ("all" up to 1,024 tokens here, "rows" above): for
  "rows" the model runs with sdpa and each layer's attention is recomputed
  in row blocks during the backward pass (:mod:`attnwidget.capture.recompute`);
* ``explain-eager``: the same with that path switched off, so the model runs
  with eager attention and tensor hooks reduce each layer's maps;
* ``explain-all``: ``keep="all"`` (the behaviour before ``keep``; only up to
  ``--all-max`` tokens, it needs ~24·L·H·n² bytes).

Peak memory is the child's peak resident set (``ru_maxrss``) minus its
resident set after the model is built and warmed up on 32 tokens (freed heap
memory handed back first, ``malloc_trim``); on CUDA it
is ``torch.cuda.max_memory_allocated`` above the allocation before the run
(host RSS is printed too). Time is the best of ``--repeats`` runs (one above
1,024 tokens). On a shared 2-core machine times vary by ~10 %.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch
import transformers as tf

sys.path.insert(0, str(Path(__file__).parent))
from explain import word_tokenizer

METHODS = ["raw", "rollout", "grad_attention", "input_x_gradient"]
CASES = ("sdpa", "eager", "explain", "explain-eager", "explain-all")


def build(attn: str | None, vocab: int, n: int, device: str, dtype: torch.dtype):
    torch.manual_seed(0)
    config = tf.LlamaConfig(
        vocab_size=vocab,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=8,
        max_position_embeddings=max(n, 64),
        bos_token_id=2,
        eos_token_id=3,
        pad_token_id=0,
    )
    if attn is not None:
        config._attn_implementation = attn
    model = tf.LlamaForCausalLM(config).eval().to(device=device, dtype=dtype)
    return model, word_tokenizer(vocab)


def text_of(n: int, vocab: int) -> str:
    generator = torch.Generator().manual_seed(n)
    words = torch.randint(0, vocab - 10, (n - 2,), generator=generator).tolist()
    return " ".join(f"w{i}" for i in words)  # + [CLS], [SEP]: n tokens


def plain(model, tokenizer, text: str) -> None:
    """One forward and the target logit's gradient w.r.t. the input embeddings."""
    device = next(model.parameters()).device
    ids = torch.tensor([tokenizer(text)["input_ids"]], device=device)
    embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
    # Only the last row is kept (explain keeps the query row): the (n, V) logits
    # are freed before the backward pass in both.
    logits = model(inputs_embeds=embeds).logits[0, -1].clone()
    target = logits.detach().argmax()
    (grad,) = torch.autograd.grad(logits[target], [embeds])
    assert torch.isfinite(grad).all()


def current_rss() -> int:
    """Resident bytes now, after handing freed heap memory back (glibc ``malloc_trim``).

    Without the trim, memory freed by the warm-up stays resident and a later
    run reusing it would not raise the peak: the difference would understate.
    """
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize()


def runner(case: str, n: int, args: argparse.Namespace):
    """A callable running ``case`` once on a text, with its model built (seed 0)."""
    import attnwidget
    from attnwidget.capture import recompute

    attn = "eager" if case == "eager" else None
    model, tokenizer = build(attn, args.vocab, n, args.device, getattr(torch, args.dtype))
    for param in model.parameters():
        param.requires_grad_(False)
    if not case.startswith("explain"):
        return lambda text: plain(model, tokenizer, text)
    keep = "all" if case == "explain-all" else None

    def run(text: str):
        # explain-eager: the eager-attention path with the same keep.
        recompute.ENABLED = case != "explain-eager"
        return attnwidget.explain(model, tokenizer, text, methods=METHODS, keep=keep).keep

    return run


def synchronize(args: argparse.Namespace) -> None:
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()


def memory_child(case: str, n: int, args: argparse.Namespace) -> dict:
    """Peak memory of one run of ``case`` in this fresh process."""
    torch.set_num_threads(args.threads)
    run = runner(case, n, args)
    run(text_of(32, args.vocab))  # warm-up: kernels, caches, lazy imports
    text = text_of(n, args.vocab)
    cuda = args.device.startswith("cuda")
    if cuda:
        synchronize(args)
        torch.cuda.reset_peak_memory_stats()
        base_gpu = torch.cuda.memory_allocated()
    base = current_rss()
    kept = run(text)
    synchronize(args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    out = {"case": case, "n": n, "peak_bytes": peak, "keep": kept, "base_bytes": base}
    if cuda:
        out["gpu_peak_bytes"] = torch.cuda.max_memory_allocated() - base_gpu
    return out


def timing_child(cases: list[str], n: int, args: argparse.Namespace) -> dict:
    """Best wall and CPU seconds of each case, the cases run alternately ``--repeats`` times.

    Alternating and keeping each case's minimum makes the ratios robust to
    other load on the machine (every case sees the same conditions).
    """
    torch.set_num_threads(args.threads)
    runs = {case: runner(case, n, args) for case in cases}
    text = text_of(n, args.vocab)
    for run in runs.values():
        run(text_of(32, args.vocab))
    best = {case: [float("inf"), float("inf")] for case in cases}
    for _ in range(args.repeats):
        for case, run in runs.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            run(text)
            synchronize(args)
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            best[case] = [min(best[case][0], wall), min(best[case][1], cpu)]
    return best


def child_json(command: list[str]) -> dict:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--all-max", type=int, default=2048)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--child", nargs=2, metavar=("CASE", "N"))
    parser.add_argument("--timing", type=int, metavar="N")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(memory_child(args.child[0], int(args.child[1]), args)))
        return
    if args.timing:
        print(json.dumps(timing_child(args.cases, args.timing, args)))
        return
    common = ["--threads", str(args.threads), "--vocab", str(args.vocab), "--device"]
    common += [args.device, "--dtype", args.dtype, "--repeats", str(args.repeats)]
    mib, gpu = 2**20, args.device.startswith("cuda")
    key = "gpu_peak_bytes" if gpu else "peak_bytes"
    print(f"# {args.device} {args.dtype}, {args.threads} threads, vocab {args.vocab}, "
          f"time: best of {args.repeats} alternating runs")  # fmt: skip
    print(f"n\tcase\tkeep\tseconds\tCPU s\t{'GPU ' if gpu else ''}peak MiB"
          "\tpeak/sdpa\tpeak/eager\ttime/sdpa\ttime/eager\tCPU/sdpa\tCPU/eager")  # fmt: skip
    for n in args.sizes:
        cases = [c for c in args.cases if c != "explain-all" or n <= args.all_max]
        me = __file__
        memory = {c: child_json([sys.executable, me, "--child", c, str(n), *common]) for c in cases}
        times = child_json([sys.executable, me, "--timing", str(n), "--cases", *cases, *common])
        for case in cases:
            row, timed = memory[case], times.get(case)
            if "error" in row or timed is None:
                print(f"{n}\t{case}\terror: {row.get('error') or times.get('error')}")
                continue
            cells = [str(n), case, str(row["keep"] or ""), f"{timed[0]:.3f}", f"{timed[1]:.3f}"]
            cells.append(f"{row[key] / mib:.0f}")
            explained = case.startswith("explain")
            for ref in ("sdpa", "eager"):
                base = memory.get(ref, {}).get(key)
                cells.append(f"{row[key] / base:.2f}" if explained and base else "")
            for index in (0, 1):
                for ref in ("sdpa", "eager"):
                    base = times.get(ref)
                    cells.append(f"{timed[index] / base[index]:.2f}" if explained and base else "")
            print("\t".join(cells), flush=True)


if __name__ == "__main__":
    main()

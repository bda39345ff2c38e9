"""Annotator: the kernel's share of Enter -> next item, with 10,000 items in the store.

Plays the page's "save" message (spans, label, advance) against a widget on a
10,000-item store and times what the kernel does before the next item is on
its way: the save (one transaction, fsync'd), loading the next item and its
saved annotation, and the progress. The whole round trip in a real browser
(the comm, the page drawing the next item) is measured by
tests/test_browser_annotator.py::test_enter_to_next_item_with_10000_items,
which prints its numbers (``-s``); the goal there is 50 ms.

    .venv/bin/python bench/annotator.py [--items 10000] [--presses 200] [--synchronous FULL]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--presses", type=int, default=200)
    parser.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    args = parser.parse_args()

    from attnwidget.annotations import Store
    from attnwidget.views import Annotator

    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "bench.sqlite", synchronous=args.synchronous)
        items = [
            {"id": f"i{k}", "text": f"item {k} " + "some words to mark " * 10}
            for k in range(args.items)
        ]
        t = time.perf_counter()
        ann = Annotator(items, store=store, annotator="ana", labels=None)
        opened = time.perf_counter() - t
        sent: list[object] = []
        ann.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
        phases: dict[str, list[float]] = {"save": [], "show": [], "total": []}
        original_save, original_show = ann._save, ann._show

        def timed(name, fn):
            def run(*a, **k):
                t0 = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    phases[name].append(time.perf_counter() - t0)

            return run

        ann._save, ann._show = timed("save", original_save), timed("show", original_show)
        for request in range(args.presses):
            message = {
                "type": "save",
                "request": request,
                "index": ann.index,
                "item_id": ann.item["id"],
                "spans": [[1, 3]],
                "label": "",
                "note": "",
                "confidence": None,
                "advance": True,
            }
            t0 = time.perf_counter()
            ann._on_message(ann, message, [])
            phases["total"].append(time.perf_counter() - t0)
        assert ann.index == args.presses and sent[-1]["type"] == "saved"  # type: ignore[index]

    def ms(values: list[float]) -> str:
        values = sorted(values)
        p95 = values[int(0.95 * (len(values) - 1))]
        return f"median {statistics.median(values) * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms"

    print(f"{args.items} items, synchronous={args.synchronous}: Annotator() {opened:.2f} s")
    print(f"  kernel, Enter -> next item sent: {ms(phases['total'])}")
    print(f"    store.save + progress:         {ms(phases['save'])}")
    print(f"    next item + its annotation:    {ms(phases['show'])}")


if __name__ == "__main__":
    main()

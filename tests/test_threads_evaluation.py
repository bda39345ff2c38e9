"""evaluate()'s forward passes switch a model to eval mode; another thread never sees that.

``evaluation_mode`` (the batched faithfulness passes of ``evaluate``) turns
dropout off by setting every module's ``training`` flag, a plain attribute all
threads share. A training step of another thread that starts meanwhile must
wait until the flags are back, so it trains with dropout as it asked.
"""

from __future__ import annotations

import threading

import torch
from tiny_models import build

from attnwidget.evaluation._batcher import evaluation_mode


def test_another_threads_forward_waits_for_train_mode_to_come_back() -> None:
    model, tokenizer = build("bert-cls")
    model.train()
    ids = torch.tensor([tokenizer("the cat sat on the mat")["input_ids"]])
    inside, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def hold() -> None:
        with evaluation_mode(model):
            inside.set()
            release.wait(timeout=30)
            with torch.no_grad():
                model(input_ids=ids)  # the holder's own pass runs in eval mode

    def record(module: torch.nn.Module, _args: object) -> None:
        if threading.current_thread() is user:
            seen.append(module.training)

    handle = model.bert.encoder.layer[0].attention.self.register_forward_pre_hook(record)
    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(timeout=30)
    user = threading.Thread(target=lambda: model(input_ids=ids))
    user.start()
    user.join(timeout=0.5)
    blocked = user.is_alive()  # waiting at its first module while eval mode is on
    release.set()
    holder.join(timeout=30)
    user.join(timeout=30)
    handle.remove()
    assert blocked, "another thread's pass ran while the model was switched to eval mode"
    assert seen == [True], seen  # it ran once, in the train mode it had set
    assert all(m.training for m in model.modules())

"""One lock for everything models share, and a guard against other threads' passes.

Two model objects can share state: ``model`` and ``model.bert`` share every
module of the backbone and the config; two models built from one config share
the config; tied models share parameters. Capture changes exactly that state
(attention implementation in the config, ``requires_grad`` of the parameters,
``training`` of the modules, hooks on the modules), so a lock per model object
would let two threads change the same modules at once and restore each
other's half-changed snapshots.

:func:`model_lock` is therefore a lock on *parts*: acquiring it for a model
claims every module, parameter and config object reachable from it, all at
once (all or nothing, under one condition variable, so two acquisitions can
never each hold half and wait for the other). Any two models that share one
part exclude each other; models that share nothing do not wait. It is
re-entrant: a thread may claim parts it already holds (explain() re-enters
capture for re-running methods, and ``model`` then ``model.bert`` is fine).

:class:`ForeignGuard` covers what cannot be scoped to a thread: ``training``
and ``requires_grad`` are plain attributes every thread sees. While a capture
has changed them, a forward pass of the same modules from another thread
waits at its first module until the model is put back; a pass already running
when the capture starts (a forward pass through these modules, or a backward
pass of any model) is waited for before anything changes; a backward
pass that reaches a parameter frozen for the capture gets its gradient (the
parameter is unfrozen for it) and the capture is told, so its caller raises
:class:`~attnwidget.errors.ConcurrentUseError` instead of returning a result
that may depend on that change.
"""

from __future__ import annotations

import sys
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import torch

# Who holds which part: id(part) -> (thread ident, depth). The holder keeps
# the parts alive (its acquisition record references them), so an id here is
# never reused by another object while it is held.
_COND = threading.Condition()
_HOLDERS: dict[int, tuple[int, int]] = {}
# Threads blocked in a guard at the first module of a new pass (computed nothing yet).
_WAITING: set[int] = set()
# The guards each thread has in force (only that thread reads or changes its own list).
_ACTIVE: dict[int, list[ForeignGuard]] = {}


def all_configs(model: torch.nn.Module, modules: list[torch.nn.Module] | None = None) -> list[Any]:
    """Every config object reachable from the model (sub-configs included), once each."""
    seen: dict[int, Any] = {}
    # A config is a plain attribute, in the instance's __dict__; getattr() on a
    # module without one goes through nn.Module.__getattr__'s failing lookup,
    # which dominated this walk. A class-level ``config`` (a property) is read too.
    pending = [
        m.__dict__["config"]
        if "config" in m.__dict__
        else getattr(type(m), "config", None) and getattr(m, "config", None)
        for m in (modules or model.modules())
    ]
    while pending:
        config = pending.pop()
        if config is None or id(config) in seen or not hasattr(config, "to_dict"):
            continue
        seen[id(config)] = config
        for key in getattr(config, "sub_configs", {}) or {}:
            pending.append(getattr(config, key, None))
    return list(seen.values())


def _parts(model: torch.nn.Module) -> list[Any]:
    modules = list(model.modules())
    return [*modules, *model.parameters(), *all_configs(model, modules)]


class SharedLock:
    """The re-entrant lock on every part of one model (see the module docstring).

    Used like :class:`threading.RLock`: ``with lock:``, ``acquire(blocking,
    timeout)``, ``release()``. The parts are read at each acquisition, so a
    module added to the model later is covered from then on.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self._model = weakref.ref(model)
        # per thread, the parts of each acquisition not yet released (innermost last)
        self._held: dict[int, list[list[Any]]] = {}

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        model = self._model()
        if model is None:
            raise RuntimeError("the model of this lock was garbage collected")
        parts = _parts(model)
        me = threading.get_ident()
        deadline = None if timeout < 0 else time.monotonic() + timeout
        with _COND:
            while any(_HOLDERS.get(id(p), (me, 0))[0] != me for p in parts):
                left = None if deadline is None else deadline - time.monotonic()
                if not blocking or (left is not None and left <= 0):
                    return False
                _COND.wait(left)
            for part in parts:
                _, depth = _HOLDERS.get(id(part), (me, 0))
                _HOLDERS[id(part)] = (me, depth + 1)
            self._held.setdefault(me, []).append(parts)
            return True

    def release(self) -> None:
        me = threading.get_ident()
        with _COND:
            stack = self._held.get(me)
            if not stack:
                raise RuntimeError("cannot release a model lock this thread does not hold")
            for part in stack.pop():
                owner, depth = _HOLDERS[id(part)]
                if depth > 1:
                    _HOLDERS[id(part)] = (owner, depth - 1)
                else:
                    del _HOLDERS[id(part)]
            if not stack:
                del self._held[me]
            _COND.notify_all()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *_exc: object) -> None:
        self.release()

    def _is_owned(self) -> bool:
        """Whether the calling thread holds this lock (as ``threading.RLock._is_owned``)."""
        with _COND:
            return bool(self._held.get(threading.get_ident()))


_LOCKS: weakref.WeakKeyDictionary[Any, SharedLock] = weakref.WeakKeyDictionary()


def model_lock(model: torch.nn.Module) -> SharedLock:
    """The lock :func:`~attnwidget.capture.capture_ready` holds for ``model``: one object
    per model, claiming every module, parameter and config it shares with any other."""
    with _COND:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = SharedLock(model)
        return lock


# The frames of a module call: ``Module.__call__`` and the hook-running body.
_CALLS = frozenset(
    {torch.nn.Module._wrapped_call_impl.__code__, torch.nn.Module._call_impl.__code__}
)


def _backward_codes() -> frozenset[Any]:
    """The Python frames a thread sits in while autograd's engine runs its backward pass.

    ``Tensor.backward`` and ``torch.autograd.grad`` both end in one Python call
    into the C++ engine, whose frame stays on the calling thread's stack until
    the pass ends (``_engine_run_backward`` since torch 2.2; the public
    functions themselves before it).
    """
    import torch.autograd.graph as graph

    codes = {torch.autograd.backward.__code__, torch.autograd.grad.__code__}
    engine = getattr(graph, "_engine_run_backward", None)
    if engine is not None:
        codes.add(engine.__code__)
    return frozenset(codes)


_BACKWARD = _backward_codes()
_POLL_S = 0.002


def _calling(frame: FrameType | None, ids: set[int], skip: object = None) -> bool:
    """Whether a frame on this stack is a call of one of the modules (``skip`` aside)."""
    while frame is not None:
        if frame.f_code in _CALLS:
            module = frame.f_locals.get("self")
            if module is not skip and id(module) in ids:
                return True
        frame = frame.f_back
    return False


def _in_backward(frame: FrameType | None) -> bool:
    """Whether a thread is inside autograd's engine (any backward pass, any model).

    A backward pass runs in no module's frame, so :func:`_calling` cannot see
    it, and which parameters its graph reaches cannot be read cheaply from
    Python. Yet one already running when a capture freezes the parameters
    may have passed a parameter's hooks (the guard's were not there yet) and
    then find it frozen: autograd drops that gradient silently. So the capture
    waits for every backward pass running elsewhere; they end on their own.
    """
    while frame is not None:
        if frame.f_code in _BACKWARD:
            return True
        frame = frame.f_back
    return False


class ForeignGuard:
    """Other threads' passes kept off a model while :meth:`changed` is entered.

    Installed before anything changes and removed after everything is put
    back (the hooks are removed with the capture's hook snapshot; the
    parameter hooks by :meth:`remove`).
    """

    def __init__(self, modules: list[torch.nn.Module], params: list[torch.nn.Parameter]) -> None:
        self.owner = threading.get_ident()
        self.ids = {id(m) for m in modules}
        self._handles: list[Any] = []
        self._waiters: set[int] = set()
        self.changing = self.done = self.disturbed = False
        # Nested in a capture of this thread that covers these modules (explain()
        # re-entering for a re-run): that guard already holds other threads off.
        outer = [g for g in _ACTIVE.get(self.owner, []) if self.ids <= g.ids]
        self.nested = bool(outer)
        # the guard whose parameter hooks are in force (this one unless nested)
        self._root: ForeignGuard = outer[0]._root if outer else self
        # ids of parameters another thread's backward pass needed: never frozen again
        self._kept: set[int] = set()
        if self.nested:
            return
        #: ``disturbed`` is set when another thread's backward pass needed a frozen parameter
        self._params = [p for p in params if p.requires_grad]
        for module in modules:
            # prepend: the guard runs before any hook of the capture's own
            self._handles.append(module.register_forward_pre_hook(self._enter, prepend=True))
        for param in self._params:
            self._handles.append(param.register_hook(self._unfreeze(param)))

    def _enter(self, module: torch.nn.Module, _args: Any) -> None:
        me = threading.get_ident()
        if me == self.owner or self.done:
            return
        # A pass already running when the guard went in is let through until the
        # model changes: changed() waits for it to end first.
        if not self.changing and _calling(sys._getframe(1), self.ids, skip=module):
            return
        with _COND:
            _WAITING.add(me)
            self._waiters.add(me)
            try:
                while not self.done:
                    _COND.wait()
            finally:
                self._waiters.discard(me)
                _WAITING.discard(me)

    def _unfreeze(self, param: torch.nn.Parameter) -> Any:
        def hook(_grad: torch.Tensor) -> None:
            # A gradient reaches a parameter only from a graph built while it
            # required one: another thread's pass. autograd checks requires_grad
            # after this hook, so the parameter is unfrozen here and kept so from
            # now on (freeze() and a nested restore skip it, under the same lock,
            # so no freeze can fall between this hook and that check).
            # Before the capture changes anything, the pass is one that changed()
            # waits for (or one that started just after that wait): it disturbs
            # nothing yet, but its parameter must not be frozen under it.
            with _COND:
                if self.done:
                    return
                self.disturbed = self.disturbed or self.changing
                self._kept.add(id(param))
                if not param.requires_grad:
                    param.requires_grad_(True)

        return hook

    def freeze(self, params: list[torch.nn.Parameter]) -> None:
        """``requires_grad`` off for the capture, except where another thread needs it."""
        with _COND:
            kept = self._root._kept
            for param in params:
                if param.requires_grad and id(param) not in kept:
                    param.requires_grad_(False)

    def restore(self, flags: list[tuple[torch.nn.Parameter, bool]]) -> None:
        """``requires_grad`` as it was; a nested capture leaves kept parameters on."""
        with _COND:
            kept = self._root._kept if self.nested else set()
            for param, flag in flags:
                if param.requires_grad != flag and id(param) not in kept:
                    param.requires_grad_(flag)

    @contextmanager
    def changed(self) -> Iterator[None]:
        """Wait for other threads' running passes, then hold them off until exit."""
        if self.nested:
            yield
            return
        while self._running_elsewhere():
            time.sleep(_POLL_S)
        with _COND:  # under the lock the parameter hooks take
            self.changing = True
        active = _ACTIVE.setdefault(self.owner, [])
        active.append(self)
        try:
            yield
        finally:
            active.remove(self)
            if not active:
                del _ACTIVE[self.owner]
            with _COND:
                self.done = True
                # Woken waiters go on with their pass at once: the next capture
                # must wait for them, not skip them as still blocked.
                _WAITING.difference_update(self._waiters)
                _COND.notify_all()

    def _running_elsewhere(self) -> bool:
        with _COND:
            skip = {self.owner, *_WAITING}
        frames = sys._current_frames()
        return any(
            _calling(f, self.ids) or _in_backward(f) for t, f in frames.items() if t not in skip
        )

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()

"""``schedule(model)``: per-tensor sparsifiers and formats for parameters, activations and gradients.

    s = schedule(model)
    s["0.weight"].sparsify(ScalarFraction(0.9), steps=100, every=10).set_format("CSR")
    s["1"].sparsify(ScalarThreshold(0.0)).set_format("CSR")      # output of module "1": a TorchUST
    s["0.weight"].grad.sparsify(ScalarFraction(0.5))             # gradient of the weight
    s.apply()                                                    # rewrites the model in place
    opt = torch.optim.SGD(model.parameters(), lr=0.1)            # after apply: the TorchUST's values
    for x, y in data:
        loss(model(x), y).backward(); opt.step(); opt.zero_grad()
        s.step(opt)                                              # ramp, re-sparsify, zero pruned state
    print(s.report())

Names are parameter names (``model.named_parameters()``) or module names (``model.named_modules()``,
``""`` the model itself) whose output is scheduled.  A parameter with a format becomes a TorchUST
(its values the parameter ``{leaf}_values``); one without stays dense with its dropped entries zero.
Gradual pruning (``steps=N``) keeps the stored pattern: dropped entries become stored zeros, so the
optimizer's parameter and its state stay the same objects and aligned; their gradients are zeroed by a
hook (momentum buffers then only decay) and ``s.step(optimizer)`` zeroes the optimizer's buffers there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

from frontend.format import TensorFormat

from ._injection import install_weight
from ._schedule_state import ParamState, as_format, cubic_progress, resolve_format, stored, zero_optimizer_state
from ._subclass import TorchUST
from .sparsifiers import ScalarThreshold, Sparsifier


class _Plan:
    """A sparsifier (possibly ramped) and a format for one tensor."""

    def __init__(self) -> None:
        self.sparsifier: Sparsifier | None = None
        self.format: TensorFormat | None = None
        self.steps: int | None = None
        self.every = 1

    def sparsify(self, sparsifier: Sparsifier, *, steps: int | None = None, every: int = 1) -> Any:
        """Use ``sparsifier``; with ``steps=N`` ramp it from 0 to its level over N ``Schedule.step()``
        calls on the cubic schedule, re-sparsifying every ``every`` steps.  Returns self (chainable)."""
        if not isinstance(sparsifier, Sparsifier):
            raise TypeError(f"sparsify needs a Sparsifier, got {type(sparsifier).__name__}")
        for label, v in (("steps", steps), ("every", every)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{label} must be a positive int, got {v!r}")
        if steps is not None:
            sparsifier.at(0.0)  # refuses sparsifiers without a level
        self.sparsifier, self.steps, self.every = sparsifier, steps, every
        return self

    def set_format(self, fmt: Any) -> Any:
        """Store the tensor in ``fmt`` (a name, DSL text or TensorFormat).  Returns self (chainable)."""
        self.format = resolve_format(fmt)
        return self

    def current(self, t: int) -> Sparsifier | None:
        """The sparsifier after ``t`` steps."""
        if self.sparsifier is None or self.steps is None:
            return self.sparsifier
        return self.sparsifier.at(cubic_progress(t, self.steps))

    def describe(self) -> str:
        sp = "-" if self.sparsifier is None else repr(self.sparsifier)
        return sp + (f" over {self.steps} steps" if self.steps is not None else "")


class GradPlan(_Plan):
    """The gradient of a scheduled tensor: ``.value`` is the last gradient (a TorchUST in the format set,
    else dense), after the sparsifier."""

    def __init__(self) -> None:
        super().__init__()
        self.value: torch.Tensor | None = None

    def sparsify(self, sparsifier: Sparsifier, *, steps: int | None = None, every: int = 1) -> GradPlan:
        """Sparsify the gradient with ``sparsifier`` (no ramp: gradients are sparsified as they come)."""
        if steps is not None:
            raise ValueError("gradual ramps (steps=) apply to parameters and activations, not gradients")
        super().sparsify(sparsifier, every=every)
        return self


class TensorPlan(_Plan):
    """What is set on one named tensor; ``.grad`` sets its gradient."""

    def __init__(self, name: str, kind: str) -> None:
        super().__init__()
        self.name, self.kind = name, kind
        self.grad = GradPlan()
        self.last: tuple[float, int, int] | None = None  # activations: sparsity, dense and stored bytes


@dataclass(frozen=True)
class TensorReport:
    """One row of :meth:`Schedule.report`."""

    name: str
    kind: str  # "parameter", "activation" or "gradient"
    sparsifier: str
    format: str
    sparsity: float | None  # None: not measured yet (an activation or gradient before a pass)
    bytes_dense: int
    bytes_stored: int


@dataclass(frozen=True)
class ScheduleReport:
    """Rows per tensor; ``str()`` gives a table."""

    rows: tuple[TensorReport, ...]

    @property
    def bytes_saved(self) -> int:
        return sum(r.bytes_dense - r.bytes_stored for r in self.rows)

    def __str__(self) -> str:
        w = max([len(r.name) for r in self.rows] + [6])
        s = max([len(r.sparsifier) for r in self.rows] + [10])
        lines = [f"{'tensor':<{w}}  {'kind':<10} {'sparsifier':<{s}} {'format':<10} {'sparsity':>8} "
                 f"{'bytes dense':>12} {'bytes stored':>12}"]
        for r in self.rows:
            sp = "-" if r.sparsity is None else f"{r.sparsity:.1%}"
            lines.append(f"{r.name:<{w}}  {r.kind:<10} {r.sparsifier:<{s}} {r.format:<10} {sp:>8} "
                         f"{r.bytes_dense:>12,} {r.bytes_stored:>12,}")
        lines.append(f"bytes saved: {self.bytes_saved:,}")
        return "\n".join(lines)


def _sparsity(x: torch.Tensor) -> float:
    d = x.dense() if isinstance(x, TorchUST) else x.detach()
    n = d.numel()
    return 1.0 - int(torch.count_nonzero(d)) / n if n else 0.0


def _bytes(x: torch.Tensor) -> tuple[int, int]:
    dense = x.numel() * x.element_size()
    return dense, (x.storage_bytes if isinstance(x, TorchUST) else dense)


class Schedule:
    """Per-tensor sparsity and formats of a model; see the module docstring."""

    def __init__(self, model: nn.Module) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"schedule needs an nn.Module, got {type(model).__name__}")
        self.model = model
        self.step_count = 0
        self._params = dict(model.named_parameters())
        self._modules = dict(model.named_modules())
        self._plans: dict[str, TensorPlan] = {}
        self._states: dict[str, ParamState] = {}
        self._applied = False

    def __getitem__(self, name: str) -> TensorPlan:
        if name not in self._plans:
            if self._applied:
                raise ValueError(f"the schedule was applied; {name!r} cannot be added any more")
            if name in self._params:
                kind = "parameter"
            elif name in self._modules:
                kind = "activation"
            else:
                raise KeyError(f"{name!r} is neither a parameter nor a module of the model; parameters: "
                               f"{', '.join(self._params) or '-'}; modules: "
                               f"{', '.join(repr(m) for m in self._modules)}")
            self._plans[name] = TensorPlan(name, kind)
        return self._plans[name]

    # ----- applying --------------------------------------------------------------------------------------
    def apply(self) -> nn.Module:
        """Rewrite the model in place (weights, hooks) and return it.  Build optimizers afterwards."""
        if self._applied:
            raise ValueError("the schedule was applied already")
        self._applied = True
        for name, plan in self._plans.items():
            if plan.kind == "parameter":
                self._apply_parameter(name, plan)
            else:
                self._modules[name].register_forward_hook(self._activation_hook(plan))
        return self.model

    def _apply_parameter(self, name: str, plan: TensorPlan) -> None:
        owner, _, leaf = name.rpartition(".")
        module = self._modules[owner]
        state = ParamState(module, leaf)
        sp = plan.current(0)
        if plan.format is not None:
            w = self._params[name].detach()
            if sp is not None and plan.steps is None:
                w = sp(w)  # dropped now: the pattern holds only the kept entries
                sp = None
            install_weight(module, stored(w, plan.format), leaf)
        if sp is not None:
            state.set_keep(state.mask_of(sp))
        state.grad_sparsifier, state.grad_format = plan.grad.sparsifier, plan.grad.format
        if state.values.requires_grad:
            state.values.register_hook(self._grad_hook(state, plan.grad))
        self._states[name] = state

    @staticmethod
    def _grad_hook(state: ParamState, grad: GradPlan) -> Any:
        def hook(g: torch.Tensor) -> torch.Tensor:
            out = state.grad_hook(g)
            grad.value = state.last_grad
            return out
        return hook

    def _activation_hook(self, plan: TensorPlan) -> Any:
        def hook(module: nn.Module, inputs: Any, out: Any) -> Any:
            if not isinstance(out, torch.Tensor) or isinstance(out, TorchUST):
                raise TypeError(f"module {plan.name!r} returned {type(out).__name__}; a scheduled activation "
                                "must be a dense torch tensor")
            if out.requires_grad and (plan.grad.sparsifier is not None or plan.grad.format is not None):
                out = out.view_as(out)
                out.register_hook(self._activation_grad_hook(plan.grad))
            sp = plan.current(self.step_count)
            y = sp(out) if sp is not None else out
            if plan.format is not None:
                y = as_format(y, plan.format)
            plan.last = (_sparsity(y),) + _bytes(y)
            return y
        return hook

    @staticmethod
    def _activation_grad_hook(grad: GradPlan) -> Any:
        def hook(g: torch.Tensor) -> torch.Tensor:
            if grad.sparsifier is not None:
                g = grad.sparsifier(g)
            grad.value = stored(g, grad.format) if grad.format is not None else g.detach()
            return g
        return hook

    # ----- training ----------------------------------------------------------------------------------
    def step(self, optimizer: torch.optim.Optimizer | None = None) -> None:
        """One training step: ramp gradual sparsifiers (re-sparsifying every ``every`` steps up to
        ``steps``), zero dropped parameter entries and, with ``optimizer``, its buffers there."""
        if not self._applied:
            raise ValueError("apply() the schedule before step()")
        self.step_count += 1
        t = self.step_count
        for name, state in self._states.items():
            plan = self._plans[name]
            if plan.steps is not None and t <= plan.steps and (t % plan.every == 0 or t == plan.steps):
                sp = plan.current(t)
                assert sp is not None
                state.set_keep(state.mask_of(sp))
            else:
                state.enforce()
            if optimizer is not None and state.keep_values is not None:
                zero_optimizer_state(optimizer, state.values, state.keep_values)

    def compact(self) -> nn.Module:
        """After training: drop the stored zeros of gradually pruned TorchUST weights (a new TorchUST
        with only the live entries is installed; its values are new parameters, so build a new optimizer
        to train on).  Returns the model."""
        if not self._applied:
            raise ValueError("apply() the schedule before compact()")
        for state in self._states.values():
            t = state.target
            if isinstance(t, TorchUST) and state.keep is not None:
                trainable = t.values().requires_grad
                install_weight(state.module, ScalarThreshold(0.0)(t.detach()), state.leaf)
                state.values.requires_grad_(trainable)
                state.keep = state.keep_values = None
                if state.values.requires_grad:
                    state.values.register_hook(self._grad_hook(state, self._plans[self._name_of(state)].grad))
        return self.model

    def _name_of(self, state: ParamState) -> str:
        return next(n for n, s in self._states.items() if s is state)

    def target_reached(self) -> bool:
        """Whether every gradual sparsifier has reached its final level."""
        return all(p.steps is None or self.step_count >= p.steps for p in self._plans.values())

    # ----- reporting ---------------------------------------------------------------------------------
    def report(self) -> ScheduleReport:
        """Per tensor: what was set, the sparsity and the bytes (dense and as stored)."""
        rows: list[TensorReport] = []
        for name, plan in self._plans.items():
            fmt = "-" if plan.format is None else (plan.format.name or str(plan.format))
            if plan.kind == "parameter":
                target: Any = self._states[name].target if name in self._states else self._params[name]
                dense, stored = _bytes(target)
                rows.append(TensorReport(name, "parameter", plan.describe(), fmt, _sparsity(target), dense, stored))
            else:
                sp, dense, stored = plan.last if plan.last is not None else (None, 0, 0)
                rows.append(TensorReport(name, "activation", plan.describe(), fmt, sp, dense, stored))
            g = plan.grad
            if g.sparsifier is not None or g.format is not None:
                gfmt = "-" if g.format is None else (g.format.name or str(g.format))
                if g.value is None:
                    rows.append(TensorReport(f"{name}.grad", "gradient", g.describe(), gfmt, None, 0, 0))
                else:
                    rows.append(TensorReport(f"{name}.grad", "gradient", g.describe(), gfmt, _sparsity(g.value),
                                             *_bytes(g.value)))
        return ScheduleReport(tuple(rows))


def schedule(model: nn.Module) -> Schedule:
    """A :class:`Schedule` for ``model`` (see the module docstring)."""
    return Schedule(model)

"""Full module backward hooks (the machinery behind Module.register_full_backward_hook and
register_full_backward_pre_hook; matches torch.utils.hooks.BackwardHook in behaviour).

A module call with such hooks passes its tensor inputs, and later its tensor outputs,
through an identity autograd Function. In the backward pass the output identity sees the
gradients w.r.t. the module's outputs first: the pre-hooks run there (and may replace
them). The input identity then sees the gradients w.r.t. the module's inputs: the hooks run
there with (grad_input, grad_output) (and may replace grad_input). When no input requires
a gradient, the hooks run at the output identity with grad_input all None, as PyTorch.
"""
from __future__ import annotations

import warnings

from ..._tensor import Tensor
from ..._grad_state import STATE
from ...autograd.function import Function

__all__ = ["BackwardHook"]


class _HookIdentity(Function):
    """Identity on its tensor arguments; the backward hands the incoming gradients to ``callback``,
    whose result (a tuple or None) replaces them."""

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        new = ctx.callback(grads)
        return (None,) + tuple(new if new is not None else grads)


def _check(result, expected, what):
    if result is None:
        return None
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != len(expected):
        raise RuntimeError(f"Backward hook returned an invalid number of grad_{what}, got {len(result)}, but "
                           f"expected {len(expected)}")
    return result


class BackwardHook:
    """One module call's hook state: the tensor positions of args and outputs and the grad_output
    seen in backward."""

    def __init__(self, module, hooks, pre_hooks):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.n_inputs = 0
        self.inputs_wrapped = False
        self.grad_outputs = None

    @staticmethod
    def _split(values):
        positions = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        return positions, [values[i] for i in positions]

    @staticmethod
    def _merge(values, positions, new):
        values = list(values)
        for i, t in zip(positions, new):
            values[i] = t
        return values

    def setup_input_hook(self, args):
        """Wrap the tensor ``args`` that require grad; returns the args to call forward with."""
        self.args = args
        self.n_inputs = len(args)
        self.wrapped = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not (STATE.enabled and self.wrapped):
            return args
        self.inputs_wrapped = True
        new = _HookIdentity.apply(self._on_grad_input, *(args[i] for i in self.wrapped))
        return tuple(self._merge(args, self.wrapped, new))

    def setup_output_hook(self, output):
        """Wrap the tensor outputs (a tensor, or a tuple / list holding tensors); returns the output."""
        single = isinstance(output, Tensor)
        values = [output] if single else list(output) if isinstance(output, (tuple, list)) else None
        if values is None:
            return output
        positions, tensors = self._split(values)
        if not (STATE.enabled and any(t.requires_grad for t in tensors)):
            return output
        new = _HookIdentity.apply(self._on_grad_output, *tensors)
        values = self._merge(values, positions, new)
        if single:
            return values[0]
        return type(output)(values) if isinstance(output, list) else tuple(values)

    def _on_grad_output(self, grads):
        for hook in list(self.pre_hooks.values()):
            res = _check(hook(self.module, grads), grads, "output")
            if res is not None:
                grads = res
        self.grad_outputs = grads
        if not self.inputs_wrapped:
            if self.hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients. See the documentation of "
                              "Module.register_full_backward_hook for more details.", stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in list(self.hooks.values()):
                if hook(self.module, grad_inputs, grads) is not None:
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
        return grads

    def _on_grad_input(self, grads):
        # grad_input has one entry per positional arg, as PyTorch: None for a non-tensor, zeros for a
        # tensor that needs no gradient
        from ... import zeros_like
        by_pos = dict(zip(self.wrapped, grads))
        full = tuple(by_pos[i] if i in by_pos else zeros_like(a) if isinstance(a, Tensor) else None
                     for i, a in enumerate(self.args))
        self.args = None
        changed = None
        for hook in list(self.hooks.values()):
            res = _check(hook(self.module, changed or full, self.grad_outputs), full, "input")
            if res is not None:
                changed = res
        if changed is None:
            return None
        return tuple(changed[i] for i in self.wrapped)

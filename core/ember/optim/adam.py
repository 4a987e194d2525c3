"""Adam (and, with ``decoupled_weight_decay=True``, AdamW) (matches torch.optim.Adam)."""
from __future__ import annotations

import ember

from .optimizer import (Optimizer, _value, _step_tensor, _check_capturable, _hyper, _rdiv, _compiling,
                        _compile_buffer, _compile_scalars)
from ..compiler._capture import host_fill

__all__ = ["Adam"]


def _bias_terms(step, lr, beta1, beta2):
    """(-step size, sqrt of the second bias correction) at step ``step`` (PyTorch's single-tensor formulas)."""
    return -(lr / (1 - beta1 ** step)), (1 - beta2 ** step) ** 0.5


class Adam(Optimizer):
    """Adam (matches torch.optim.Adam; PyTorch's single-tensor algorithm, the same operations in
    the same order, so float64 results are bit-identical to PyTorch's cpu where both round alike).

    Per parameter with gradient g (``-g`` when ``maximize``), at step t::

        p = p * (1 - lr * weight_decay)        (decoupled_weight_decay, i.e. AdamW)
        g = g + weight_decay * p               (otherwise, if weight_decay != 0)
        m = lerp(m, g, 1 - beta1)
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)                  (amsgrad; v_max replaces v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    State per parameter: ``'step'`` (0-dim float tensor), ``'exp_avg'``, ``'exp_avg_sq'``
    (and ``'max_exp_avg_sq'`` with amsgrad).

    ``capturable=True`` (PyTorch's meaning): ``'step'`` lives on the parameter's device and the bias
    corrections and step size are 0-dim tensors computed from it (PyTorch's capturable formula,
    ``denom = sqrt(v) / (sqrt(1 - beta2**t) * -step_size) + eps / -step_size; p += m / denom``),
    so a step never reads a number back to the host and can be captured and replayed.
    ``differentiable=True`` (PyTorch's meaning): the step runs with grad enabled and takes the same
    tensor formula (the step stays on cpu), cloning what PyTorch clones, so gradients flow through the
    update to non-leaf parameters, gradients and state that require grad.
    ``fused=True`` is accepted (the single-tensor update, which PyTorch's fused cpu kernel matches in float64).
    Raises ValueError for invalid lr / eps / betas / weight_decay (PyTorch's messages),
    RuntimeError for sparse gradients and for ``fused`` with ``foreach`` or ``differentiable`` (as PyTorch),
    AssertionError when a capturable step meets a parameter on cpu (as PyTorch).
    """

    #: hyperparameters a replay of ember.compile reads live (they are not guards: an lr scheduler does not recapture)
    _compile_live = frozenset({"lr"})

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if not 0.0 <= _value(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= _value(betas[0]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= _value(betas[1]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self._check_fused(fused, foreach, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    def _init_state(self, p, capturable, amsgrad):
        """``self.state[p]``, created on ``p``'s first step; RuntimeError for a sparse gradient (PyTorch's)."""
        if p._grad._layout.name != "strided":
            raise RuntimeError(f"{type(self).__name__} does not support sparse gradients, please consider SparseAdam "
                               "instead")
        st = self.state[p]
        if not st:
            st["step"] = _step_tensor(p.device if capturable else None)
            st["exp_avg"] = ember.zeros_like(p)
            st["exp_avg_sq"] = ember.zeros_like(p)
            if amsgrad:
                st["max_exp_avg_sq"] = ember.zeros_like(p)
        return st

    def _count_steps(self, live, amsgrad):
        """ember.compile: every parameter of ``live`` counts its step (state created first), before any update;
        returns their step tensors (0-dim, cpu)."""
        steps = []
        for p in live:
            st = self._init_state(p, False, amsgrad)
            st["step"].add_(1)
            steps.append(st["step"])
        return steps

    def _compile_terms(self, group, beta1, beta2, wd, amsgrad):
        """ember.compile: count the step of every parameter of ``group`` that has a gradient, then compute their
        (-step size, sqrt of the second bias correction, decay factor) on the host in one recorded call that
        each replay repeats (following the step counts and the live learning rate, e.g. an lr scheduler's, bit
        for bit as eagerly); returns {parameter: (three 0-dim float64 cpu tensors)}. One call and one fused run
        of step increments per group instead of two calls per parameter."""
        live = [p for p in group["params"] if p._grad is not None]
        steps = self._count_steps(live, amsgrad)

        def terms():
            lr = _value(group["lr"])
            decay = 1 - lr * wd
            out, seen = [], {}
            for s in steps:
                step = s.item()
                t = seen.get(step)
                if t is None:        # (the parameters of a group usually share their step count)
                    t = seen[step] = _bias_terms(step, lr, beta1, beta2) + (decay,)
                out.extend(t)
            return out
        sc = _compile_scalars(self, ("adam", tuple(map(id, live))), terms, 3 * len(live))
        return {p: (sc[3 * i], sc[3 * i + 1], sc[3 * i + 2]) for i, p in enumerate(live)}

    def _flat_update(self, group, beta1, beta2, wd, eps, maximize, decoupled):
        """ember.compile on the cpu: the group's whole update over flat buffers, step counts included, or False
        (nothing done) when it does not apply - then the caller updates parameter by parameter.

        The moments of the parameters are views of one flat buffer each (laid out here once; ``state`` keeps
        per-parameter tensors, views now), the gradients are concatenated once, and the moment updates, the
        denominator and the step run once over all elements, with each parameter's bias correction and step size
        spread over its segment by one recorded host call (in the parameters' dtype, as the per-parameter update
        rounds them); each parameter then gets one ``add_`` of its segment. Every element sees the operations of the
        per-parameter update in the same order and dtype, so the values are the same bit for bit - numpy pays per
        call, and a small model's step is mostly calls."""
        live = [p for p in group["params"] if p._grad is not None]
        if len(live) < 2 or group["amsgrad"]:
            return False
        p0 = live[0]
        if p0._device.type != "cpu" or p0._dtype not in (ember.float32, ember.float64):
            return False
        for p in live:
            if p._device != p0._device or p._dtype is not p0._dtype or p._layout.name != "strided" \
                    or p._grad._layout.name != "strided" or p._grad._dtype is not p0._dtype:
                return False
        steps = self._count_steps(live, False)
        key = tuple(map(id, live))
        m, v, segments = self._flat_moments(live, key)
        total = sum(n for _, n in segments)

        def fill(a):      # a: [-step size per element, sqrt(bias correction 2) per element, decay]
            lr = _value(group["lr"])
            counts = [s.item() for s in steps]
            if counts.count(counts[0]) == len(counts):      # (the usual case: one step count for the group)
                a[:total], a[total:2 * total] = _bias_terms(counts[0], lr, beta1, beta2)
            else:
                for step, (off, n) in zip(counts, segments):
                    a[off:off + n], a[total + off:total + off + n] = _bias_terms(step, lr, beta1, beta2)
            a[2 * total] = 1 - lr * wd
        buf = host_fill(fill, _compile_buffer(self, ("adam-flat", key), 2 * total + 1, p0._dtype))
        neg_step_size, bias_correction2_sqrt, decay = buf[:total], buf[total:2 * total], buf[2 * total]
        g = ember.cat([p._grad.reshape(-1) for p in live])
        if maximize:
            g = -g
        if wd != 0 and not decoupled:
            g = g.add(ember.cat([p.detach().reshape(-1) for p in live]), alpha=wd)
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denom = v.sqrt().div_(bias_correction2_sqrt).add_(eps)
        step = (m * neg_step_size).div_(denom)         # addcdiv_'s (value * t1) / t2, for every parameter
        for p, (off, n) in zip(live, segments):
            if wd != 0 and decoupled:
                p.mul_(decay)
            p.add_(step[off:off + n].view(p._shape))
        return True

    def _flat_moments(self, live, key):
        """(exp_avg, exp_avg_sq, [(offset, numel)]): flat buffers whose segments are the moments in ``state`` of the
        parameters ``live`` (``key``: their ids), copied in and ``state`` pointed at the views on first use or after
        the state was replaced."""
        store = self.__dict__.setdefault("_flat_adam", {})
        got = store.get(key)
        state = self.state
        if got is not None:
            m, v, segments = got
            if all(state[p]["exp_avg"]._storage is m._storage and state[p]["exp_avg_sq"]._storage is v._storage
                   for p in live):
                return got
        segments, off = [], 0
        for p in live:
            segments.append((off, p.numel()))
            off += p.numel()
        m = ember.cat([state[p]["exp_avg"].detach().reshape(-1) for p in live])
        v = ember.cat([state[p]["exp_avg_sq"].detach().reshape(-1) for p in live])
        for p, (o, n) in zip(live, segments):
            state[p]["exp_avg"] = m[o:o + n].view(p._shape)
            state[p]["exp_avg_sq"] = v[o:o + n].view(p._shape)
        store[key] = (m, v, segments)
        return store[key]

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss (or None)."""
        loss = self._closure_loss(closure)
        state = self.state
        name = type(self).__name__
        for group in self.param_groups:
            capturable = group.get("capturable", False)
            compiling = not capturable and _compiling()
            differentiable = group.get("differentiable", False)
            lr = _hyper(group["lr"], capturable or differentiable)
            beta1, beta2 = (_value(b) for b in group["betas"])
            wd, eps, amsgrad, maximize = group["weight_decay"], group["eps"], group["amsgrad"], group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            if compiling:
                if not differentiable and self._flat_update(group, beta1, beta2, wd, eps, maximize, decoupled):
                    continue
                terms = self._compile_terms(group, beta1, beta2, wd, amsgrad)
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                st = self._init_state(p, capturable, amsgrad)
                step_t, exp_avg, exp_avg_sq = st["step"], st["exp_avg"], st["exp_avg_sq"]
                if capturable:
                    _check_capturable(p, step_t)
                if maximize:
                    g = -g
                if compiling:
                    neg_step_size, bias_correction2_sqrt, decay = terms[p]     # (the step counted already)
                else:
                    step_t.add_(1)
                if wd != 0:
                    if decoupled:
                        p.mul_(decay if compiling else 1 - lr * wd)
                    else:
                        g = g.add(p, alpha=wd)
                exp_avg.lerp_(g, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                if capturable or differentiable:
                    # 0-dim tensors on the step's device, never read back (PyTorch's capturable order)
                    step_size_neg = _rdiv(lr, 1 - beta1 ** step_t).neg()
                    bias_correction2_sqrt = (1 - beta2 ** step_t).sqrt()
                    if amsgrad:
                        v = st["max_exp_avg_sq"]
                        if differentiable:       # out= is not recorded by autograd
                            v.copy_(ember.maximum(v.clone(), exp_avg_sq))
                        else:
                            ember.maximum(v, exp_avg_sq, out=v)
                    else:
                        v = exp_avg_sq
                    denom = (v.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(_rdiv(eps, step_size_neg))
                    p.addcdiv_(exp_avg.clone() if differentiable else exp_avg, denom)
                    continue
                if not compiling:
                    step = step_t.item()
                    neg_step_size, bias_correction2_sqrt = _bias_terms(step, lr, beta1, beta2)
                if amsgrad:
                    v = st["max_exp_avg_sq"]
                    ember.maximum(v, exp_avg_sq, out=v)
                else:
                    v = exp_avg_sq
                denom = v.sqrt().div_(bias_correction2_sqrt).add_(eps)
                if compiling:
                    # addcdiv_ with the (0-dim tensor) step size folded into t1: (1 * (t1 * s)) / t2 is eager's
                    # (s * t1) / t2 bit for bit, and p is written by the same in-place op as eagerly (one version
                    # bump, or as many as a device's composite addcdiv_ makes)
                    p.addcdiv_(exp_avg * neg_step_size, denom)
                else:
                    p.addcdiv_(exp_avg, denom, value=neg_step_size)
        return loss

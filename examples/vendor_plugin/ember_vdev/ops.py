"""A custom op in the plugin's own namespace, with kernels for vdev and cpu and a derivative.

``ember.ops.vdev.fused_scale_shift(x, scale, shift)`` = ``x * scale + shift`` in one kernel
(one pass over memory instead of two), ``scale`` and ``shift`` broadcast to ``x``'s shape.
It shows the three steps of torch.library, in ember.library's spelling:
``lib.define`` (schema + meta), ``lib.impl`` (one kernel per device type) and
``register_autograd`` (backward written with ember ops, so it runs on every device).
"""
from __future__ import annotations

import numpy as np

import ember
from ember.library import register_autograd

from .kernels import compute_np, operand, store

SCHEMA = "fused_scale_shift(Tensor self, Tensor scale, Tensor shift) -> Tensor"


def meta(self, scale, shift):
    """Checks and output inference, run on every device before any kernel."""
    for name, t in (("self", self), ("scale", scale), ("shift", shift)):
        if not isinstance(t, ember.Tensor):
            raise TypeError(f"fused_scale_shift(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if not (self.device == scale.device == shift.device):
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{self.device} and {scale.device if scale.device != self.device else shift.device}!")
    if not self.dtype.is_floating_point or not (self.dtype == scale.dtype == shift.dtype):
        raise RuntimeError(f"fused_scale_shift(): expected floating tensors of one dtype, got {self.dtype}, "
                           f"{scale.dtype} and {shift.dtype}")
    shape = tuple(self.shape)
    for t in (scale, shift):                     # broadcasts to self: trailing sizes equal or 1, no extra dims
        if t.dim() > len(shape) or any(n not in (1, m) for n, m in zip(tuple(t.shape)[::-1], shape[::-1])):
            raise RuntimeError(f"fused_scale_shift(): scale {list(scale.shape)} and shift {list(shift.shape)} must "
                               f"broadcast to self's shape {list(shape)}")
    return self.device, (self.device.type, self.layout.name, self.dtype), shape, self.dtype


def vdev_kernel(self, scale, shift, *, out):
    """vdev kernel of ``vdev::fused_scale_shift``, floating dtypes: store x * scale + shift (broadcast; float16 /
    bfloat16 in float32, rounded once) into ``out``.
    """
    cd = compute_np(out.dtype)                   # fused means rounded once: float16 / bfloat16 in float32
    x, s, b = operand(self, cd), operand(scale, cd), operand(shift, cd)
    store(out, x * s + b)


def cpu_kernel(self, scale, shift, *, out):
    """cpu kernel of ``vdev::fused_scale_shift``, floating dtypes: write x * scale + shift (broadcast; float16 /
    bfloat16 in float32, rounded once) into ``out``.
    """
    # cpu tensors' numpy() shares memory; a real vendor would not ship a cpu kernel, but one
    # makes the op usable (and testable) without the device
    # (kernels run below autograd but receive the caller's tensors, which may require grad: detach)
    cd = compute_np(out.dtype)
    x, s, b = (t.detach().numpy().astype(cd) for t in (self, scale, shift))
    np.copyto(out.numpy(), x * s + b, casting="unsafe")


def _sum_to(g, shape):
    """``g`` summed down to ``shape`` (the reverse of broadcasting), with primitive ``sum``."""
    lead = g.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return g.sum(dim=dims, keepdim=True).reshape(shape) if dims else g


def setup_context(ctx, inputs, output):
    """Save ``x`` and ``scale`` for backward, and shift's shape."""
    x, scale, shift = inputs
    ctx.save_for_backward(x, scale)
    ctx.shift_shape = tuple(shift.shape)


def backward(ctx, grad):
    """Gradients of x * scale + shift: (grad * scale, grad * x, grad), each summed down to its input's shape (None
    where ``needs_input_grad`` is False).
    """
    x, scale = ctx.saved_tensors
    gx = _sum_to(grad * scale, tuple(x.shape)) if ctx.needs_input_grad[0] else None
    gs = _sum_to(grad * x, tuple(scale.shape)) if ctx.needs_input_grad[1] else None
    gb = _sum_to(grad, ctx.shift_shape) if ctx.needs_input_grad[2] else None
    return gx, gs, gb


def register(lib):
    """Define ``vdev::fused_scale_shift`` on ``lib`` (schema, meta, doc), register its vdev and cpu kernels for the
    floating dtypes and its derivative.
    """
    name = lib.define(SCHEMA, meta, doc="x * scale + shift in one pass (scale, shift broadcast to x).")
    lib.impl(name, vdev_kernel, device="vdev", dtypes=ember.library.FLOATING)
    lib.impl(name, cpu_kernel, device="cpu", dtypes=ember.library.FLOATING)
    register_autograd(name, backward, setup_context=setup_context, lib=lib)

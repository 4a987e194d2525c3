"""Native heavy kernels for vdev: a recipe for a device whose vendor library already has them.

ember_vdev registers only the primitive set, so ``conv2d``, ``mm``, ``addmm`` and ``softmax``
run on vdev as composites (im2col + bmm, exp / sum / amax, ...). A vendor whose library has
tuned convolution, GEMM and softmax registers those as *native* kernels: the dispatcher then
prefers them, key by key, over the composites (docs/vendor-guide.md, "Native heavy kernels").
Copy this file: replace the numpy bodies below with calls into your library, passing it the
arena views (``ember_vdev.runtime.view``: shape, strides and memory of each operand).

Kernel contract (as for the primitives): the op's meta has checked the arguments and allocated
``out`` with the result's shape and dtype; write into it. Schemas (``ember._dispatch.ops[name].schema``):

    conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0,
           int[2] dilation=1, int groups=1) -> Tensor
    mm(Tensor self, Tensor mat2) -> Tensor
    bmm(Tensor self, Tensor mat2) -> Tensor
    addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor
    softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor

Two ways to use it:

- in your own plugin, call ``register(registry.library("myplugin"))`` from ``ember_register``;
- as an add-on over the installed ember-vdev, this module is itself a plugin:
  ``ember.plugins.register(native_kernels, name="vdev-native")`` (``ember.plugins.unregister``
  takes it back; tests/vendor/test_native_recipe.py does both).

``python examples/vendor_plugin/native_kernels.py [ember conformance options]`` loads it and runs
``ember conformance vdev`` (by default on these five ops): their cells read ``N`` (native) where
they read ``C`` (composite) without it.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

import ember
from ember.library import COMPLEX, FLOATING
from ember.plugins import API_VERSION, hookimpl
from ember_vdev.runtime import view

# above the kernels ember_vdev registers (its primitive bmm): an add-on overrides on purpose, and what it replaces
# comes back when it is unregistered. In your own plugin, register these in place of the primitives they make
# redundant (your bmm) and leave priority at 0.
PRIORITY = 1

# PyTorch never warns about inf / nan (softmax of inf is nan): filtered for this module, not around each call
warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)


def _operands(out, *ts):
    """The arena views of ``ts`` in out's computation dtype (float16 / bfloat16 compute in float32); a 0-dim cpu
    tensor (addmm's ``self`` may be one, as in PyTorch) as a 0-dim array.
    """
    cd = np.dtype(np.float32) if out.dtype in (ember.float16, ember.bfloat16) else out.dtype.numpy_dtype
    return [(view(t) if t.device.type == "vdev" else np.asarray(t.item())).astype(cd, copy=False) for t in ts]


def _store(out, r):
    """Write ``r`` into ``out``'s arena view, rounding to its dtype."""
    np.copyto(view(out), r.reshape(view(out).shape), casting="unsafe")


# ---------------------------------------------------------------- the kernels (your library's calls go here)
def conv2d(input, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, *, out):
    """vdev kernel of ``conv2d``, floating dtypes: input (N, C, H, W) * weight (O, C / groups, kH, kW) + bias (O,)
    -> ``out`` (N, O, H_out, W_out) (cross-correlation, as torch.nn.functional.conv2d; NCHW).
    """
    x, w = _operands(out, input, weight)
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    N, O, oh, ow = out.shape
    _, Cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    # every window (N, C, oh, ow, kH, kW), strided and dilated, as a view of the padded input
    win = np.lib.stride_tricks.sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]
    win = win.reshape(N, groups, Cg, oh, ow, kh, kw)
    r = np.einsum("ngchwij,gocij->ngohw", win, w.reshape(groups, O // groups, Cg, kh, kw), optimize=True)
    r = r.reshape(N, O, oh, ow)
    if bias is not None:
        r = r + _operands(out, bias)[0].reshape(O, 1, 1)
    _store(out, r)


def mm(self, mat2, *, out):
    """vdev kernel of ``mm`` (and ``bmm``), floating and complex dtypes: self (n, k) @ mat2 (k, m) -> ``out``."""
    _store(out, np.matmul(*_operands(out, self, mat2)))


def addmm(self, mat1, mat2, *, beta=1, alpha=1, out):
    """vdev kernel of ``addmm``, floating and complex dtypes: beta * self + alpha * (mat1 @ mat2) -> ``out`` (n, m);
    ``self`` (broadcast to (n, m)) is not read when beta == 0, so NaN in it does not propagate (PyTorch).
    """
    a, b = _operands(out, mat1, mat2)
    r = np.matmul(a, b)
    if alpha != 1:
        r = r * alpha
    if beta != 0:
        r = r + _operands(out, self)[0] * beta       # self broadcasts to (n, m)
    _store(out, r)


def softmax(self, dim, dtype=None, *, out):
    """vdev kernel of ``softmax``, floating dtypes: exp(x - max) / sum(exp(x - max)) over ``dim`` -> ``out`` (in
    out's dtype, ``dtype`` if given; a 0-dim input acts as 1-D).
    """
    x = np.atleast_1d(_operands(out, self)[0])
    if x.size == 0:
        return
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    _store(out, e / e.sum(axis=dim, keepdims=True))


KERNELS = [("conv2d", conv2d, FLOATING), ("mm", mm, FLOATING | COMPLEX), ("bmm", mm, FLOATING | COMPLEX),
           ("addmm", addmm, FLOATING | COMPLEX), ("softmax", softmax, FLOATING)]


def register(lib):
    """Register the kernels above for device "vdev" on ``lib`` (an ``ember.library.Library``), at ``PRIORITY``."""
    for name, fn, dtypes in KERNELS:
        lib.impl(name, fn, device="vdev", dtypes=dtypes, priority=PRIORITY)


# ---------------------------------------------------------------- as an add-on plugin
@hookimpl
def ember_plugin_info():
    """The add-on's manifest: it declares no device type of its own (its kernels are priority overrides)."""
    return {"name": "vdev-native", "version": "0.1.0", "api_version": f"{API_VERSION[0]}.{API_VERSION[1]}",
            "provides": {}}


@hookimpl
def ember_register(registry):
    """Register the native kernels (all-or-nothing, as any plugin's registration)."""
    register(registry.library("vdev_native"))


if __name__ == "__main__":      # python native_kernels.py [options of ember conformance]: the suite with these kernels
    import runpy
    ember.plugins.register(sys.modules[__name__], name="vdev-native")
    sys.argv = ["ember", "conformance", "vdev", *(sys.argv[1:] or ["--op", ",".join(n for n, _, _ in KERNELS)])]
    runpy.run_module("ember", run_name="__main__")

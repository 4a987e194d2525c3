"""Top-level functions of ``torch`` that are forms of what ember already has: predicates and quantized-tensor
accessors as functions, deprecated linear-algebra spellings, global flags PyTorch code sets and reads, eager
``cond`` / ``while_loop``, and a few samplers and constructors. Each matches the torch function of the same
name (see docs/api-coverage.md).
"""
from __future__ import annotations

import builtins

import numpy as np

from . import _dtype as D
from ._tensor import Tensor
from ._tensor_extras import _removed

__all__ = ["is_conj", "is_neg", "is_inference", "get_device", "int_repr", "q_scale", "q_zero_point",
           "q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis", "hardshrink", "matrix_rank",
           "nuclear_norm", "frobenius_norm", "norm_except_dim", "vmap", "to_dlpack", "typename", "is_storage",
           "set_warn_always", "is_warn_always_enabled", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "set_num_interop_threads", "get_num_interop_threads", "init_num_threads",
           "set_flush_denormal", "set_default_tensor_type", "set_anomaly_enabled", "binomial", "poisson",
           "frombuffer", "empty_permuted", "view_as_real_copy", "view_as_complex_copy", "get_device_module",
           "cond", "while_loop", "GradScaler", "spmm", "eig", "symeig", "solve", "lstsq", "svd_lowrank",
           "pca_lowrank", "is_distributed", "thread_safe_generator"]


def _method(name, doc):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = doc
    return fn


is_conj = _method("is_conj", "Whether ``input`` is a conjugate view (matches torch.is_conj).")
is_neg = _method("is_neg", "Whether ``input`` is a negated view (matches torch.is_neg).")
is_inference = _method("is_inference", "Whether ``input`` was made in inference_mode (matches torch.is_inference).")
get_device = _method("get_device", "The device index of ``input``; -1 on cpu (matches torch.get_device).")
int_repr = _method("int_repr", "A quantized tensor's integers (matches torch.int_repr).")
q_scale = _method("q_scale", "A per-tensor quantized tensor's scale (matches torch.q_scale).")
q_zero_point = _method("q_zero_point", "A per-tensor quantized tensor's zero point (matches torch.q_zero_point).")
q_per_channel_scales = _method("q_per_channel_scales", "A per-channel quantized tensor's scales "
                                                       "(matches torch.q_per_channel_scales).")
q_per_channel_zero_points = _method("q_per_channel_zero_points", "A per-channel quantized tensor's zero points "
                                                                 "(matches torch.q_per_channel_zero_points).")
q_per_channel_axis = _method("q_per_channel_axis", "A per-channel quantized tensor's axis "
                                                   "(matches torch.q_per_channel_axis).")


def hardshrink(input, lambd=0.5):
    """``ember.nn.functional.hardshrink`` (matches torch.hardshrink)."""
    from .nn import functional as F
    return F.hardshrink(input, lambd)


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """Removed from PyTorch: raises its RuntimeError pointing to ``ember.linalg.matrix_rank`` (matches
    torch.matrix_rank)."""
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed.\nPlease use the "
                       "`torch.linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
                       "`torch.linalg.matrix_rank()` to 'hermitian'.")


def nuclear_norm(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of singular values over the last two dims or ``dim`` (matches torch.nuclear_norm:
    ``linalg.matrix_norm(ord='nuc')``)."""
    from . import linalg
    return linalg.matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else dim, keepdim=keepdim, dtype=dtype,
                              out=out)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The Frobenius norm over ``dim`` (matches torch.frobenius_norm: ``linalg.vector_norm`` of order 2)."""
    from . import linalg
    return linalg.vector_norm(input, 2, dim=dim, keepdim=keepdim, out=out)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (matches torch.norm_except_dim)."""
    from .nn.utils._norms import norm_except_dim as f
    return f(v, pow, dim)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``ember.func.vmap`` (matches torch.vmap)."""
    from .func import vmap as f
    return f(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


def to_dlpack(tensor):
    """A DLPack capsule sharing ``tensor``'s memory (matches torch.to_dlpack; ``ember.from_dlpack`` reads one)."""
    return tensor.__dlpack__()


def typename(obj):
    """The type name PyTorch prints: ``'torch.FloatTensor'`` style for a tensor (its legacy type), else the
    object's qualified class name (matches torch.typename)."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    if not hasattr(obj, "__qualname__"):
        module = type(obj).__module__
    return name if module in ("", "builtins") else f"{module}.{name}"


def is_distributed(input):
    """False: an ember tensor is never split across processes (matches torch.is_distributed)."""
    return False


def thread_safe_generator():
    """``ember.random.thread_safe_generator`` (matches torch.thread_safe_generator)."""
    from .random import thread_safe_generator as f
    return f()


def is_storage(obj):
    """Whether ``obj`` is a storage (matches torch.is_storage; ember's storage is ``UntypedStorage``)."""
    from ._allocator import UntypedStorage
    return isinstance(obj, UntypedStorage)


# ---------------------------------------------------------------- global flags
class _Flags:
    warn_always = False
    deterministic = False
    deterministic_warn_only = False
    matmul_precision = "highest"
    interop_threads = 1


def set_warn_always(b):
    """Make warnings that PyTorch shows once be shown every time (matches torch.set_warn_always; ember's
    once-per-op fallback warning also reads EMBER_FALLBACK_WARN)."""
    _Flags.warn_always = builtins.bool(b)


def is_warn_always_enabled():
    """The ``set_warn_always`` flag (matches torch.is_warn_always_enabled)."""
    return _Flags.warn_always


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ask for deterministic algorithms (matches torch.use_deterministic_algorithms). ember's cpu and opencl
    kernels are deterministic already; the flag is kept for the code that reads it."""
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    _Flags.deterministic, _Flags.deterministic_warn_only = mode, builtins.bool(warn_only)


def are_deterministic_algorithms_enabled():
    """The ``use_deterministic_algorithms`` flag (matches torch.are_deterministic_algorithms_enabled)."""
    return _Flags.deterministic


def is_deterministic_algorithms_warn_only_enabled():
    """Its ``warn_only`` (matches torch.is_deterministic_algorithms_warn_only_enabled)."""
    return _Flags.deterministic_warn_only


def set_deterministic_debug_mode(debug_mode):
    """0 / 'default', 1 / 'warn', 2 / 'error' (matches torch.set_deterministic_debug_mode)."""
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """0, 1 or 2 (matches torch.get_deterministic_debug_mode)."""
    return 0 if not _Flags.deterministic else (1 if _Flags.deterministic_warn_only else 2)


def set_float32_matmul_precision(precision):
    """'highest', 'high' or 'medium' (matches torch.set_float32_matmul_precision). ember computes float32
    products in full float32 on every device (no TF32 / bfloat16 passes), which is 'highest'."""
    if precision not in ("highest", "high", "medium"):     # PyTorch warns and changes nothing
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"setFloat32MatmulPrecision call has no effect.", stacklevel=2)
        return
    _Flags.matmul_precision = precision


def get_float32_matmul_precision():
    """The ``set_float32_matmul_precision`` value (matches torch.get_float32_matmul_precision)."""
    return _Flags.matmul_precision


def set_num_interop_threads(n):
    """Kept for code that sets it (matches torch.set_num_interop_threads): ember has no inter-op thread pool."""
    if not isinstance(n, int) or n < 1:
        raise RuntimeError("Number of interop threads must be positive")
    _Flags.interop_threads = n


def get_num_interop_threads():
    """The ``set_num_interop_threads`` value (matches torch.get_num_interop_threads)."""
    return _Flags.interop_threads


def init_num_threads():
    """Nothing to initialise: numpy's thread pools start on their own (matches torch.init_num_threads)."""


def set_flush_denormal(mode):
    """Whether subnormals can be flushed to zero on this cpu (matches torch.set_flush_denormal): ember's numpy
    kernels do not set the FTZ/DAZ flags, so this returns False (not supported) and changes nothing."""
    return False


def set_default_tensor_type(t):
    """Legacy: set the default floating dtype from a tensor type (``ember.DoubleTensor`` or
    ``'torch.DoubleTensor'``) (matches torch.set_default_tensor_type, cpu types)."""
    from . import set_default_dtype
    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    types = {"FloatTensor": D.float32, "DoubleTensor": D.float64, "HalfTensor": D.float16,
             "BFloat16Tensor": D.bfloat16}
    key = name.rsplit(".", 1)[-1]
    if key not in types:
        raise TypeError(f"invalid type: '{name}'")
    set_default_dtype(types[key])


def set_anomaly_enabled(enabled, check_nan=True):
    """``ember.autograd.set_detect_anomaly`` (matches torch.set_anomaly_enabled)."""
    from .autograd import set_detect_anomaly
    set_detect_anomaly(enabled, check_nan)


# ---------------------------------------------------------------- samplers and constructors
def binomial(count, prob, generator=None):
    """Samples of Binomial(count, prob), elementwise, in ``count``'s dtype (matches torch.binomial)."""
    import ember
    seed = int(ember.randint(0, 2 ** 62, (), generator=generator))   # (advances the generator, as a draw)
    n = np.broadcast_to(count.detach().cpu().numpy(), np.broadcast_shapes(tuple(count.shape), tuple(prob.shape)))
    p = np.broadcast_to(prob.detach().cpu().numpy(), n.shape)
    out = np.random.default_rng(seed).binomial(n.astype(np.int64), p).astype(count.dtype.numpy_dtype)
    return ember.tensor(out, device=count.device)


def poisson(input, generator=None):
    """Samples of Poisson(rate) for each rate in ``input``, same dtype (matches torch.poisson)."""
    import ember
    seed = int(ember.randint(0, 2 ** 62, (), generator=generator))   # (advances the generator, as a draw)
    rates = input.detach().cpu().numpy()
    if (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return ember.tensor(np.random.default_rng(seed).poisson(rates).astype(input.dtype.numpy_dtype),
                        device=input.device)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D cpu tensor sharing the memory of an object with the buffer protocol (matches torch.frombuffer).
    ValueError for an empty buffer or sizes that do not fit, as PyTorch."""
    import ember
    mv = memoryview(buffer)
    if mv.nbytes == 0:
        raise ValueError("both buffer length (0) and count (-1) must not be 0")
    a = np.frombuffer(buffer, dtype=dtype.numpy_dtype, count=count, offset=offset)
    t = ember.from_numpy(a)
    return t.requires_grad_() if requires_grad else t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor of ``size`` whose dims lie in memory in the order ``physical_layout``
    (outermost first) (matches torch.empty_permuted)."""
    import ember
    size = tuple(size)
    if sorted(physical_layout) != list(builtins.range(len(size))):
        raise RuntimeError("Dimension order must be a permutation of 0..ndim-1")
    physical = ember.empty([size[d] for d in physical_layout], dtype=dtype, device=device)
    inverse = [list(physical_layout).index(d) for d in builtins.range(len(size))]
    t = physical.permute(inverse)
    return t.requires_grad_() if requires_grad else t


def view_as_real_copy(input, *, out=None):
    """``view_as_real(input)`` copied (matches torch.view_as_real_copy)."""
    import ember
    r = ember.view_as_real(input).clone()
    return r if out is None else out.copy_(r)


def view_as_complex_copy(input, *, out=None):
    """``view_as_complex(input)`` copied (matches torch.view_as_complex_copy)."""
    import ember
    r = ember.view_as_complex(input).clone()
    return r if out is None else out.copy_(r)


def get_device_module(device=None):
    """The ``ember.<device type>`` module of a device (matches torch.get_device_module; the current
    accelerator's when None). RuntimeError for an unknown device type."""
    import ember
    if device is None:
        acc = ember.accelerator.current_accelerator()
        kind = acc.type if acc is not None else "cpu"
    else:
        kind = device.type if isinstance(device, ember.device) else ember.device(device).type
    mod = getattr(ember, kind, None)
    if mod is None:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'ember.{kind}'.")
    return mod


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (matches torch.cond in eager mode; a
    tensor ``pred`` is read on the host)."""
    return true_fn(*operands) if builtins.bool(pred) else false_fn(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``carried_inputs = body_fn(*carried_inputs)`` while ``cond_fn(*carried_inputs)`` (matches
    torch._higher_order_ops.while_loop in eager mode); returns the final tuple."""
    carried = tuple(carried_inputs)
    while builtins.bool(cond_fn(*carried)):
        carried = tuple(body_fn(*carried))
    return carried


def spmm(input, mat2):
    """Sparse (COO) times dense matrix (matches torch.spmm: ``ember.sparse.mm``)."""
    from . import sparse
    return sparse.mm(input, mat2)


eig, symeig, solve, lstsq = (_removed(n) for n in ("eig", "symeig", "solve", "lstsq"))


def svd_lowrank(A, q=6, niter=2, M=None):
    """An approximate rank-``q`` SVD ``(U, S, V)`` of ``A`` (or ``A - M``) by randomized subspace iteration with
    ``niter`` power steps (matches torch.svd_lowrank; Halko et al. 2011). Shapes (*, m, n) -> (*, m, q),
    (*, q), (*, n, q)."""
    import ember
    X = A if M is None else A - M
    m, n = X.shape[-2], X.shape[-1]
    q = builtins.min(q, m, n)
    R = ember.randn(*X.shape[:-2], n, q, dtype=X.dtype, device=X.device)
    Q = ember.linalg.qr(X @ R).Q
    for _ in builtins.range(niter):
        Q = ember.linalg.qr(X.mH @ Q).Q
        Q = ember.linalg.qr(X @ Q).Q
    B = Q.mH @ X
    U, S, Vh = ember.linalg.svd(B, full_matrices=False)
    return Q @ U, S, Vh.mH


def pca_lowrank(A, q=None, center=True, niter=2):
    """Principal components ``(U, S, V)`` of the rows of ``A`` through ``svd_lowrank`` (matches
    torch.pca_lowrank; ``q`` defaults to min(6, m, n); ``center`` subtracts the column means)."""
    m, n = A.shape[-2], A.shape[-1]
    q = builtins.min(6, m, n) if q is None else q
    if center:
        return svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter)
    return svd_lowrank(A, q, niter)


from .amp import GradScaler  # noqa: E402  (ember.GradScaler, as torch.GradScaler)

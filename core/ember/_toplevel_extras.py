"""Top-level functions of ``torch`` that are forms of what ember already has: predicates and quantized-tensor
accessors as functions, deprecated linear-algebra spellings, global flags PyTorch code sets and reads, eager
``cond`` / ``while_loop``, a few samplers and constructors, and the last tensor ops of the namespace
(``as_strided_``, ``slice_inverse``, ``convolution``, ``embedding_bag`` / ``embedding_renorm_``,
``segment_reduce``, ``lobpcg``, ``quantize_per_tensor_dynamic``, ``empty_quantized``). Each matches the torch
function of the same name (see docs/api-coverage.md).
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
           "pca_lowrank", "is_distributed", "thread_safe_generator", "FatalError", "as_strided_", "slice_inverse",
           "convolution", "embedding_renorm_", "embedding_bag", "segment_reduce", "lobpcg",
           "quantize_per_tensor_dynamic", "empty_quantized"]


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




# ---------------------------------------------------------------- the remaining tensor ops of torch (issue 18)
class FatalError(Exception):
    """The class PyTorch raises for a fatal error of its C++ runtime (matches torch.FatalError). ember never
    raises it; it exists so that ``except torch.FatalError`` clauses run unchanged."""


def as_strided_(input, size, stride, storage_offset=None):
    """Give ``input`` itself the geometry ``size`` / ``stride`` / ``storage_offset`` over its own storage
    (matches torch.as_strided_). RuntimeError as ``as_strided`` for a geometry outside the storage, and
    "a leaf Variable that requires grad is being used in an in-place operation." for such a leaf."""
    if input.requires_grad and input.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    import ember
    with ember.no_grad():
        v = input.as_strided(size, stride, storage_offset)
    input._set_storage_meta(v)
    return input


def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """The inverse of ``src.slice(dim, start, end, step)``: ``input``'s storage viewed with ``src``'s size,
    stride and storage offset (matches torch.slice_inverse, the view op behind slice_scatter's
    functionalization; ``dim`` / ``start`` / ``end`` / ``step`` only say which slice ``input`` was).
    RuntimeError when that geometry lies outside ``input``'s storage. Differentiable as ``as_strided``."""
    return input.as_strided(tuple(src.shape), src.stride(), src.storage_offset())


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The convolution behind every ``conv*d`` / ``conv_transpose*d`` (matches torch.convolution): 1, 2 or 3
    spatial dims from ``weight``'s rank, transposed when ``transposed``; every argument is required, as in
    PyTorch. Shapes as ``ember.nn.functional.conv{1,2,3}d`` / ``conv_transpose{1,2,3}d``."""
    from .nn import functional as F
    nd = weight.dim() - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected weight with 3, 4 or 5 dims (1 to 3 spatial), got "
                           f"{weight.dim()}")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), groups, tuple(dilation))
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Scale, in place, the rows of ``input`` (num_embeddings, dim) named by the int64 / int32 ``indices`` so
    that their ``norm_type`` norm is at most ``max_norm`` (matches torch.embedding_renorm_, the step behind
    ``embedding(max_norm=...)``). RuntimeError for other index dtypes or a leaf that requires grad;
    IndexError for an index out of range. Returns ``input``."""
    if indices.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #2 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.type()} instead (while checking arguments for "
                           "embedding_renorm_)")
    if input.requires_grad and input.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    n = input.shape[0]
    for v in indices.reshape(-1).tolist():
        if not -n <= v < n:
            raise IndexError(f"select(): index {v} out of range for tensor of size {list(input.shape)} at "
                             "dimension 0")
    from .nn._functional.misc import _embedding_renorm_
    _embedding_renorm_(input, indices, max_norm, norm_type)
    return input


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The ATen form of ``nn.functional.embedding_bag`` (matches torch.embedding_bag): ``mode`` 0 / 1 / 2 is
    sum / mean / max; returns ``(output, offset2bag, bag_size, max_indices)`` as PyTorch's cpu kernel does:
    ``output`` (B, dim); ``offset2bag`` (n,) the bag of each index (empty in sum mode without
    padding_idx); ``bag_size`` the non-padding count per bag (zeros in sum mode); ``max_indices`` the
    row giving each maximum (max mode, (B, dim)), else ``bag_size`` (mean) or zeros (sum). The last two have
    one entry per bag (per offset in sum mode). Errors as ``nn.functional.embedding_bag``."""
    import ember
    from .nn import functional as F
    if mode not in (0, 1, 2):
        raise ValueError("mode has to be one of sum, mean or max")
    name = ("sum", "mean", "max")[mode]
    if padding_idx is not None and padding_idx < 0:        # PyTorch's "no padding" is -1 here
        padding_idx = None
    out = F.embedding_bag(indices, weight, offsets, mode=name, scale_grad_by_freq=scale_grad_by_freq,
                          sparse=sparse, per_sample_weights=per_sample_weights,
                          include_last_offset=include_last_offset, padding_idx=padding_idx)
    dev, n_off = weight.device, offsets.shape[0]
    idx = indices.reshape(-1).tolist()
    starts = [int(o) for o in offsets.tolist()]
    if include_last_offset:               # PyTorch's cpu kernel takes the last bag to the end of ``indices``
        starts = starts[:-1]
        if mode != 0:
            n_off -= 1
    starts.append(len(idx))
    bag_of = []
    for b in builtins.range(len(starts) - 1):
        bag_of += [b] * (builtins.min(starts[b + 1], len(idx)) - starts[b])
    sizes = [0] * n_off
    if mode != 0:
        for i, b in zip(idx, bag_of):
            if i != padding_idx:
                sizes[b] += 1
    bag_size = ember.tensor(sizes, dtype=D.int64, device=dev)
    offset2bag = (ember.tensor(bag_of, dtype=D.int64, device=dev) if mode != 0 or padding_idx is not None
                  else ember.zeros(0, dtype=D.int64, device=dev))
    if mode == 2:
        w = weight.detach()
        best = []
        for b in builtins.range(out.shape[0]):
            rows = [i for i, bb in zip(idx, bag_of) if bb == b and i != padding_idx]
            if not rows:
                best.append([0] * weight.shape[1])
                continue
            vals = w.index_select(0, ember.tensor(rows, dtype=D.int64, device=dev))
            pos = vals.argmax(0).tolist()
            best.append([rows[p] for p in pos])
        max_indices = ember.tensor(best, dtype=D.int64, device=dev).reshape(out.shape[0], weight.shape[1])
    else:
        max_indices = bag_size.clone() if mode == 1 else ember.zeros(n_off, dtype=D.int64, device=dev)
    return out, offset2bag, bag_size, max_indices


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Reduce consecutive segments of ``data`` along ``axis`` (matches torch.segment_reduce).

    ``reduce`` is 'sum', 'mean', 'max' / 'amax', 'min' / 'amin' or 'prod'. The segments are given by
    ``lengths`` (shape ``data.shape[:axis] + (S,)``, non-negative, each row summing to data.shape[axis]) or by
    ``offsets`` (``data.shape[:axis] + (S + 1,)``); ``axis`` must be ``lengths.dim() - 1``. The result has
    ``data``'s shape with dim ``axis`` of size S. An empty segment gives ``initial`` if set, else 0 (sum),
    nan (mean), -inf (max), inf (min) or 1 (prod); ``initial`` also joins every other segment's reduction
    (the mean divides by the element count only). Differentiable with respect to ``data`` (composite ops).
    RuntimeError with PyTorch's messages for a bad ``reduce``, missing segments, negative lengths, lengths
    that do not add up (unless ``unsafe``) or a wrong ``axis``."""
    import ember
    kinds = {"sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min", "amin": "min",
             "prod": "prod"}
    if reduce not in kinds:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    kind = kinds[reduce]
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    seg = lengths if lengths is not None else offsets
    if axis < 0:
        axis += data.dim()
    if axis != seg.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if lengths is None:
        lengths = offsets[..., 1:] - offsets[..., :-1]
    lens = lengths.reshape(-1, lengths.shape[-1]).tolist()
    if any(v < 0 for row in lens for v in row):
        raise RuntimeError("lengths contains negative value!")
    if not unsafe and any(builtins.sum(row) != data.shape[axis] for row in lens):
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    empty_value = {"sum": 0.0, "mean": float("nan"), "max": float("-inf"), "min": float("inf"), "prod": 1.0}[kind]
    lead = tuple(data.shape[:axis])
    flat = data.reshape((-1,) + tuple(data.shape[axis:]))                  # (P, N, *rest)
    rest = tuple(data.shape[axis + 1:])
    outs = []
    for p, row in enumerate(lens):
        pieces, start = [], 0
        for n in row:
            part = flat[p].narrow(0, start, n)
            start += n
            if n == 0:
                fill = empty_value if initial is None else initial
                pieces.append(ember.full(rest, fill, dtype=data.dtype, device=data.device))
                continue
            if kind == "sum":
                r = part.sum(0)
            elif kind == "mean":
                r = part.sum(0) / n if initial is None else (part.sum(0) + initial) / n
            elif kind == "max":
                r = part.amax(0)
            elif kind == "min":
                r = part.amin(0)
            else:
                r = part.prod(0)
            if initial is not None:
                if kind == "sum":
                    r = r + initial
                elif kind == "max":
                    r = ember.clamp(r, min=initial)
                elif kind == "min":
                    r = ember.clamp(r, max=initial)
                elif kind == "prod":
                    r = r * initial
            pieces.append(r)
        outs.append(ember.stack(pieces, 0) if pieces else data.new_zeros((0,) + rest))
    return ember.stack(outs, 0).reshape(lead + (lengths.shape[-1],) + rest)


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The ``k`` largest (``largest=False``: smallest) eigenpairs ``(E, X)`` of the symmetric positive
    definite generalized problem ``A X = B X diag(E)`` by LOBPCG (matches torch.lobpcg's defaults: ``k`` 1
    or X.shape[-1], ``n`` = k search vectors, ``niter`` 1000, ``tol`` sqrt(machine eps), largest first).

    The iteration is scipy.sparse.linalg.lobpcg on the host (float32 / float64, dense or sparse COO ``A``,
    batches one matrix at a time); ``iK`` is the preconditioner. Shapes: A, B (*, m, m); X (*, m, n) ->
    E (*, k), X (*, m, k). AssertionError when A is not square or B's shape differs, ValueError when
    m < 3 n, as PyTorch. ``method`` / ``tracker`` / ``ortho_*`` (PyTorch's own iteration's knobs) are
    accepted and not used; no gradient is recorded."""
    import ember
    from scipy.sparse.linalg import lobpcg as scipy_lobpcg
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and tuple(A.shape) != tuple(B.shape):
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = A.dtype if A.dtype in (D.float32, D.float64) else D.float32
    if tol is None:
        tol = {D.float32: 1.2e-07, D.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than "
                         f"3 x the number of requested eigenpairs (={n})")
    largest = True if largest is None else largest

    def host(t):
        if t is None:
            return None
        t = t.to_dense() if getattr(t, "is_sparse", False) else t
        return t.detach().cpu().numpy().astype(dtype.numpy_dtype)

    batch = tuple(A.shape[:-2])
    a_all = host(A).reshape((-1, m, m))
    b_all = None if B is None else host(B).reshape((-1, m, m))
    x_all = None if X is None else host(X).reshape((-1, m, n))
    pre = host(iK)
    es, xs = [], []
    for i in builtins.range(a_all.shape[0]):
        x0 = (ember.randn(m, n, dtype=dtype).numpy() if x_all is None else x_all[i])
        e, v = scipy_lobpcg(a_all[i], x0, B=None if b_all is None else b_all[i], M=pre, tol=tol,
                            maxiter=1000 if niter is None else niter, largest=largest)
        order = np.argsort(-e if largest else e)[:k]
        es.append(e[order])
        xs.append(v[:, order])
    E = np.stack(es).reshape(batch + (k,)).astype(dtype.numpy_dtype)
    V = np.stack(xs).reshape(batch + (m, k)).astype(dtype.numpy_dtype)
    return ember.tensor(E, device=A.device), ember.tensor(V, device=A.device)


def quantize_per_tensor_dynamic(input, dtype, reduce_range):
    """Quantize ``input`` per tensor with a scale and zero point chosen from its range (the range widened
    to hold 0) (matches torch.quantize_per_tensor_dynamic). ``dtype`` ember.quint8 or ember.qint8;
    ``reduce_range`` uses one bit less (0..127 / -64..63). A constant-0 input gets scale 0.1 (PyTorch's
    rule). RuntimeError "dtype ... not supported" for other dtypes. Needs the ember-quantized plugin."""
    import ember
    name = getattr(dtype, "name", str(dtype))
    ranges = {"quint8": (0, 255), "qint8": (-128, 127)}
    if name not in ranges:
        label = {"qint32": "QInt32"}.get(name, name)
        raise RuntimeError(f"dtype {label}not supported")
    qmin, qmax = ranges[name]
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    values = input.detach().cpu().to(D.float32).numpy()
    lo = builtins.min(float(values.min()) if values.size else 0.0, 0.0)
    hi = builtins.max(float(values.max()) if values.size else 0.0, 0.0)
    lo, hi = float(np.float32(lo)), float(np.float32(hi))
    scale = (hi - lo) / (qmax - qmin)
    if float(np.float32(scale)) == 0.0 or not np.isfinite(1.0 / np.float32(scale)):
        scale = 0.1
    zp_from_min = qmin - lo / scale
    zp_from_max = qmax - hi / scale
    err_min = abs(qmin) - abs(lo / scale)
    err_max = abs(qmax) - abs(hi / scale)
    zp = zp_from_min if err_min < err_max else zp_from_max
    zp = int(builtins.max(qmin, builtins.min(qmax, builtins.round(zp))))
    return ember.quantize_per_tensor(input, scale, zp, dtype)


def empty_quantized(size, qtensor, *, dtype=None, layout=None, device=None, pin_memory=False,
                    memory_format=None):
    """A quantized tensor of ``size`` with ``qtensor``'s quantization (scheme, scale(s), zero point(s),
    axis) and dtype (matches torch.empty_quantized; the integers are the zero point rather than
    uninitialised memory). NotImplementedError, as PyTorch, when ``qtensor`` is not quantized."""
    import ember
    if not getattr(qtensor, "is_quantized", False):
        raise NotImplementedError("Could not run 'aten::empty_quantized' with arguments from the "
                                  f"'{qtensor.device.type.upper()}' backend: the template is not a quantized tensor")
    size = tuple(size)
    qdtype = qtensor.dtype if dtype is None else dtype
    dev = qtensor.device if device is None else device
    zeros = ember.zeros(size, device=dev)
    if qtensor.qscheme() in (ember.per_channel_affine, ember.per_channel_symmetric):
        return ember.quantize_per_channel(zeros, qtensor.q_per_channel_scales(), qtensor.q_per_channel_zero_points(),
                                          qtensor.q_per_channel_axis(), qdtype)
    return ember.quantize_per_tensor(zeros, qtensor.q_scale(), qtensor.q_zero_point(), qdtype)


from .amp import GradScaler  # noqa: E402  (ember.GradScaler, as torch.GradScaler)

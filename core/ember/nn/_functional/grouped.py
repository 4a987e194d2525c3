"""ember.nn.functional: grouped_mm, linear_cross_entropy, and PyTorch's dispatch helpers boolean_dispatch and
has_torch_function / handle_torch_function.

``grouped_mm`` is a loop of ordinary matmuls over the groups that ``offs`` marks, so it runs and differentiates
on every device (PyTorch's is one fused CUDA / cpu kernel with alignment rules; ember has none of those rules).
``linear_cross_entropy`` is PyTorch's reference path: ``cross_entropy(linear(input, weight, bias), target)``;
a ``LinearCrossEntropyOptions`` is validated and its chunking is not done (the logits are materialised).
ember has no ``__torch_function__`` protocol: ``has_torch_function*`` answer False for every argument, so
code written against PyTorch's pattern ``if has_torch_function(...): return handle_torch_function(...)``
takes the ordinary path.
"""
from __future__ import annotations

import ember
from ... import _dtype as D

__all__ = ["grouped_mm", "linear_cross_entropy", "boolean_dispatch", "has_torch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "handle_torch_function"]


# ----------------------------------------------------------------------------- grouped_mm
def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Matrix products of groups (matches torch.nn.functional.grouped_mm). ``offs`` (G,) int32 holds the
    cumulative end of each group along the dim that a 2-D operand is split on:

    - 3-D (G, m, k) x 3-D (G, k, n), no ``offs``: a batched product -> (G, m, n);
    - 2-D (M, k) x 3-D (G, k, n): rows of ``mat_a`` in groups, group g times ``mat_b[g]`` -> (M, n);
    - 3-D (G, m, k) x 2-D (k, N): columns of ``mat_b`` in groups -> (m, N);
    - 2-D (m, K) x 2-D (K, n): the contraction dim in groups -> (G, m, n).

    Rows / columns past the last offset are zero. dtypes float32, bfloat16 or float16, both the same;
    ``out_dtype`` must be None or ``mat_a``'s dtype; ``bias`` is not supported (PyTorch's "Bias not supported
    yet"). RuntimeError with PyTorch's messages for each bad form. Differentiable with respect to both."""
    for name, m in (("mat_a", mat_a), ("mat_b", mat_b)):
        if m.dim() not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
        if m.dtype not in (D.float32, D.bfloat16, D.float16):
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{_aten_name(m.dtype)}")
    if mat_a.dtype != mat_b.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_c_name(mat_b.dtype)}, but got "
                           f"{_c_name(mat_a.dtype)} instead")
    if out_dtype is not None and out_dtype != mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    a3, b3 = mat_a.dim() == 3, mat_b.dim() == 3
    if (offs is None) != (a3 and b3):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d")
    if mat_a.shape[-1] != mat_b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if a3 and b3:
        if mat_a.shape[0] != mat_b.shape[0]:
            raise RuntimeError("batched dimension has to match")
        return ember.matmul(mat_a, mat_b)
    if offs.dtype != D.int32:
        raise RuntimeError("Offsets have to be int32")
    ends = [int(v) for v in offs.tolist()]
    groups = mat_b.shape[0] if b3 else (mat_a.shape[0] if a3 else len(ends))
    if len(ends) != groups:
        raise RuntimeError("matrix batch sizes have to match")
    bounds = list(zip([0] + ends[:-1], ends))
    if not a3 and b3:                                        # rows of A in groups
        parts = [mat_a[s:e] @ mat_b[g] for g, (s, e) in enumerate(bounds)]
        rest = mat_a.shape[0] - (ends[-1] if ends else 0)
        if rest > 0:
            parts.append(mat_a.new_zeros((rest, mat_b.shape[-1])))
        return ember.cat(parts, 0)
    if a3:                                                   # columns of B in groups
        parts = [mat_a[g] @ mat_b[:, s:e] for g, (s, e) in enumerate(bounds)]
        rest = mat_b.shape[1] - (ends[-1] if ends else 0)
        if rest > 0:
            parts.append(mat_a.new_zeros((mat_a.shape[1], rest)))
        return ember.cat(parts, 1)
    return ember.stack([mat_a[:, s:e] @ mat_b[s:e] for s, e in bounds], 0)     # the contraction in groups


def _aten_name(dtype):
    return {"float64": "Double", "int64": "Long", "int32": "Int", "complex64": "ComplexFloat"}.get(
        dtype.name, dtype.name.capitalize())


def _c_name(dtype):
    return {"float32": "float", "float64": "double", "bfloat16": "c10::BFloat16", "float16": "c10::Half"}.get(
        dtype.name, dtype.name)


# ----------------------------------------------------------------------------- linear_cross_entropy
def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` (matches
    torch.nn.functional.linear_cross_entropy, its reference path).

    Shapes: ``input`` (in_features,) or (N, in_features); ``linear_weight`` (C, in_features) or
    (C, d1, ..., dK, in_features) for a K-dimensional loss (batched input only), giving logits
    (N, C, d1, ..., dK); ``linear_bias`` (C, d1, ..., dK); ``target`` class indices or probabilities as
    ``cross_entropy``. ``ignore_index`` None means -100 for indices and is refused with probabilities.
    ``options`` (a ``nn.LinearCrossEntropyOptions``) asks PyTorch for its chunked path; ember computes the
    same loss on the reference path (the full logits are materialised). RuntimeError with PyTorch's messages
    for bad ranks and shapes."""
    from .loss import cross_entropy
    from .misc import linear
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires"
                           f" batched input, (N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if out_features:
        total = num_classes
        for f in out_features:
            total *= f
        linear_weight = linear_weight.reshape(total, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(total)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                         label_smoothing=label_smoothing)


# ----------------------------------------------------------------------------- dispatch helpers
def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling ``if_true`` or ``if_false`` by the boolean argument ``arg_name`` (keyword) or at
    position ``arg_index``, ``default`` when absent (matches torch.nn.functional.boolean_dispatch, which makes
    e.g. ``max_pool2d(..., return_indices=...)``). The docstring is the one of the two that has one;
    RuntimeError "only one function can have a docstring" when both have."""
    def fn(*args, **kwargs):
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        else:
            flag = default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    if if_true.__doc__ is not None and if_false.__doc__ is not None:
        raise RuntimeError("only one function can have a docstring")
    doc = if_true.__doc__ if if_true.__doc__ is not None else if_false.__doc__
    if_true.__doc__ = if_false.__doc__ = doc
    fn.__doc__ = doc
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    return fn


def has_torch_function(relevant_args):
    """False: ember dispatches no ``__torch_function__`` overrides, so no argument needs one (the name of
    torch.nn.functional.has_torch_function, kept for code that follows PyTorch's override pattern)."""
    return False


def has_torch_function_unary(obj):
    """False, as ``has_torch_function`` (torch.nn.functional.has_torch_function_unary)."""
    return False


def has_torch_function_variadic(*args):
    """False, as ``has_torch_function`` (torch.nn.functional.has_torch_function_variadic)."""
    return False


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Never reached in ember (``has_torch_function*`` answer False): raises RuntimeError, since ember has no
    ``__torch_function__`` protocol to dispatch to (torch.nn.functional.handle_torch_function's name)."""
    raise RuntimeError(f"handle_torch_function({getattr(public_api, '__name__', public_api)}): ember has no "
                       "__torch_function__ override protocol; call the function directly")

"""Gradient checks: analytical Jacobians from the engine against finite differences
(matches torch.autograd.gradcheck / gradgradcheck, on any device).

The numerical Jacobian perturbs one input element at a time by ``eps`` (central
differences); the analytical one runs one backward per output element. Inputs should
be float64 / complex128 (a warning says so otherwise) and must not overlap in memory.

Complex values as torch.autograd.gradcheck checks them: a complex output is checked as its real
and imaginary parts (two real outputs), and a complex input element is perturbed along its real
and its imaginary axis, the numerical entry being d/dx + i d/dy -- the conjugate Wirtinger
derivative that ember's (and PyTorch's) backward computes for a real output.
"""
from __future__ import annotations

import warnings

import numpy as np

from .._tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the Jacobians differ (a RuntimeError, as in PyTorch)."""


def _as_tuple(x):
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _host(t):
    dtype = np.complex128 if t._dtype.is_complex else np.float64
    return np.array(t.detach().cpu().tolist(), dtype=dtype).reshape(-1) if t.numel() else np.zeros(0, dtype)


def _real_outputs(func):
    """``func`` with each complex output replaced by its real and imaginary parts (gradcheck's view of them)."""
    def wrapped(*args):
        out = func(*args)
        outs = _as_tuple(out) if isinstance(out, (Tensor, tuple, list)) else (out,)
        split = []
        for o in outs:
            if isinstance(o, Tensor) and o._dtype.is_complex:
                split += [o.real, o.imag]
            else:
                split.append(o)
        return tuple(split)
    return wrapped


def _diff_outputs(func, inputs):
    from .grad_mode import enable_grad
    with enable_grad():
        outs = _as_tuple(func(*inputs))
    return [o for o in outs if isinstance(o, Tensor)]


def _numerical(func, inputs, i, n_outs, eps):
    """Jacobians d outputs / d inputs[i] by central differences: one array (numel_in, numel_out) per output."""
    from .grad_mode import no_grad, enable_grad
    x = inputs[i]
    shape = x._shape
    cols = [[] for _ in range(n_outs)]
    steps = (eps, eps * 1j) if x._dtype.is_complex else (eps,)

    def evaluate():
        with enable_grad():          # func may itself differentiate (gradgradcheck)
            return [_host(o) for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)]

    for k in range(x.numel()):
        idx = tuple(int(j) for j in np.unravel_index(k, shape)) if shape else ()
        col = [0.0] * n_outs
        for step in steps:          # real axis, then (complex input) the imaginary axis: d/dx + i d/dy
            with no_grad():
                elem = x[idx]
                orig = elem.item()
                elem.fill_(orig + step)
            plus = evaluate()
            with no_grad():
                elem.fill_(orig - step)
            minus = evaluate()
            with no_grad():
                elem.fill_(orig)
            for o in range(n_outs):
                col[o] = col[o] + (plus[o] - minus[o]) / (2 * eps) * (step / eps)
        for o in range(n_outs):
            cols[o].append(col[o])
    if not x.numel():           # nothing to perturb: empty Jacobians, one forward for the outputs' sizes
        return [np.zeros((0, o.size)) for o in evaluate()]
    return [np.array(c).reshape(x.numel(), c[0].size) for c in cols]


def _analytical(outputs, inputs, diff_idx):
    """Jacobians from the engine: {(output, input): array (numel_in, numel_out)}."""
    from . import grad as autograd_grad
    from .._ops._creation import zeros_like
    from .._memory_format import contiguous_format
    jac = {}
    for o, out in enumerate(outputs):
        if not out._requires_grad:
            for i in diff_idx:
                jac[(o, i)] = np.zeros((inputs[i].numel(), out.numel()),
                                       np.complex128 if inputs[i]._dtype.is_complex else np.float64)
            continue
        rows = {i: [] for i in diff_idx}
        for j in range(out.numel()):
            g = zeros_like(out, memory_format=contiguous_format)      # row-major: element j of view(-1)
            g.view(-1)[j] = 1.0
            grads = autograd_grad(out, [inputs[i] for i in diff_idx], g, retain_graph=True, allow_unused=True)
            for i, gi in zip(diff_idx, grads):
                if gi is not None and gi._shape != inputs[i]._shape:
                    raise GradcheckError(f"gradient for input {i} has shape {list(gi._shape)}, expected "
                                         f"{list(inputs[i]._shape)}")
                rows[i].append(np.zeros(inputs[i].numel(), np.complex128 if inputs[i]._dtype.is_complex else
                                        np.float64) if gi is None else _host(gi))
        for i in diff_idx:
            jac[(o, i)] = np.array(rows[i]).T.reshape(inputs[i].numel(), out.numel())
    return jac


def _is_sparse(x):
    return isinstance(x, Tensor) and x._layout.name != "strided"


def _masked(func, inputs):
    """Sparse inputs and outputs, PyTorch's masked semantics: a sparse input that requires grad is
    checked through its (coalesced) specified values, a sparse output through its dense form."""
    specs = {i: x for i, x in enumerate(inputs) if _is_sparse(x)}
    new = list(inputs)
    for i, x in specs.items():
        c = x.detach().coalesce()
        specs[i] = (c._indices(), tuple(x._shape))
        new[i] = c._values().clone().requires_grad_(x._requires_grad)

    def wrapped(*args):
        from .._ops._sparse import sparse_coo_tensor
        args = [sparse_coo_tensor(specs[i][0], a, specs[i][1], is_coalesced=True) if i in specs else a
                for i, a in enumerate(args)]
        out = func(*args)
        if isinstance(out, Tensor):
            return out.to_dense() if _is_sparse(out) else out
        return tuple(o.to_dense() if _is_sparse(o) else o for o in out)
    return wrapped, tuple(new)


def _fmt(a):
    from .._ops._creation import tensor
    ember = __import__("ember")
    return repr(tensor(a, dtype=ember.complex128 if np.iscomplexobj(a) else ember.float64))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against finite differences (matches torch.autograd.gradcheck).

    :param func: a function of ``inputs`` returning a tensor or a tuple of tensors.
    :param inputs: a tensor or tuple; those with ``requires_grad=True`` are checked.
    :param eps: finite-difference step. :param atol: absolute tolerance. :param rtol: relative tolerance.
    :param raise_exception: raise GradcheckError (showing both Jacobians) instead of returning False.
    :returns: True when every Jacobian matches.
    :raises GradcheckError: on a mismatch, when ``raise_exception``.
    """
    if check_forward_ad or check_batched_grad or check_batched_forward_grad:
        raise NotImplementedError("ember.autograd.gradcheck: forward-mode and batched checks are not supported")
    inputs = _as_tuple(inputs)
    func, inputs = _masked(func, inputs)
    func = _real_outputs(func)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff_idx:
        if inputs[i]._dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This check "
                          f"will likely fail if all the inputs are not of double precision floating point. ",
                          UserWarning, stacklevel=2)
        if any(st == 0 and s > 1 for s, st in zip(inputs[i]._shape, inputs[i]._stride)):
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs that "
                               f"are non-overlapping to be able to compute the numerical gradients correctly. You "
                               f"should call .contiguous on the input before passing it to gradcheck.")
    outputs = _diff_outputs(func, inputs)
    analytical = _analytical(outputs, inputs, diff_idx)
    for i in diff_idx:
        numerical = _numerical(func, inputs, i, len(outputs), eps)
        for o in range(len(outputs)):
            a, n = analytical[(o, i)], numerical[o]
            if a.shape != n.shape or not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                msg = (f"Jacobian mismatch for output {o} with respect to input {i},\n"
                       f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False) -> bool:
    """Check second derivatives: gradcheck of ``autograd.grad(func(inputs), inputs, grad_outputs,
    create_graph=True)`` with respect to the inputs and ``grad_outputs`` (random when None).
    Matches torch.autograd.gradgradcheck; same arguments and errors as ``gradcheck``."""
    from . import grad as autograd_grad
    from .._ops._random import randn_like
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    outputs = _diff_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(randn_like(o).requires_grad_() for o in outputs if o._requires_grad)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def new_func(*args):
        ins, gos = args[:n], args[n:]
        outs = [o for o in _as_tuple(func(*ins)) if isinstance(o, Tensor) and o._requires_grad]
        grads = autograd_grad(outs, [ins[i] for i in diff_idx], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)

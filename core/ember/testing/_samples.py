"""Shared sample generators for the op database (``ember.testing.opdb``).

Every generator has the ``sample_inputs`` signature ``(op, device, dtype, requires_grad,
...)`` plus keyword options, and yields a small set of ``SampleInput``s (about a dozen)
covering the layouts a kernel must get right: 0-dim, empty, 1-D, 2-D contiguous,
non-contiguous (strided), transposed and sliced views. No sample has negative strides
(ember has none). Values are deterministic: each sample draws from a seed derived from
the op's id, the dtype and the sample's position, so the same call gives the same
tensors on every run and every device.

Typical use in an OpInfo::

    OpInfo("log", ref=np.log, sample_inputs=partial(unary_samples, low=0.1))
    OpInfo("add", ref=np.add, sample_inputs=binary_samples)
    OpInfo("sum", ref=np.sum, sample_inputs=reduction_samples)
"""
from __future__ import annotations

import zlib

from ._opinfo import SampleInput, make_tensor

__all__ = ["ALL_DTYPES", "FLOATING", "FLOATING_AND_COMPLEX", "INTEGRAL", "INTEGRAL_AND_BOOL", "REAL",
           "REAL_AND_BOOL", "COMPLEX", "NUMERIC", "seed_for", "tensor_variants", "unary_samples",
           "binary_samples", "reduction_samples", "shape_samples", "with_grad"]

# ---------------------------------------------------------------- dtype name sets
FLOATING = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
INTEGRAL_AND_BOOL = ("bool",) + INTEGRAL
REAL = INTEGRAL + FLOATING                     # every non-bool, non-complex dtype
REAL_AND_BOOL = ("bool",) + REAL
FLOATING_AND_COMPLEX = FLOATING + COMPLEX
NUMERIC = REAL + COMPLEX                       # everything but bool
ALL_DTYPES = ("bool",) + NUMERIC

#: the shapes of the tensor variants: (name, shape); the views are built by tensor_variants
SHAPES = (("0-dim", ()), ("empty", (0,)), ("1-D", (5,)), ("2-D", (3, 4)))


def seed_for(op, dtype, i) -> int:
    """A stable seed for sample ``i`` of ``op`` at ``dtype`` (crc32: same on every run)."""
    name = getattr(op, "id", None) or getattr(op, "name", None) or str(op)
    return zlib.crc32(f"{name}/{getattr(dtype, 'name', dtype)}/{i}".encode())


def with_grad(t, requires_grad):
    """``t`` as a leaf that requires grad (floating / complex only), keeping its strides."""
    if requires_grad and (t.dtype.is_floating_point or t.dtype.is_complex):
        return t.detach().requires_grad_(True)
    return t


def tensor_variants(op, device, dtype, requires_grad=False, *, low=None, high=None, exclude_zero=False,
                    salt=0, shapes=None, views=True):
    """(name, tensor) pairs: one per ``SHAPES`` entry, then (when ``views``) a non-contiguous
    (3, 4), a transposed (3, 4) (``.t()`` of a (4, 3)) and a sliced view ``x[1:, ::2]`` of a
    (4, 6) — shape (3, 3). Each tensor is a leaf (``requires_grad`` for floating dtypes).

    :param shapes: replaces ``SHAPES`` (a sequence of (name, shape)).
    :param salt: varies the seeds (for a second operand of the same op).
    """
    k = 0

    def mk(shape, **kw):
        nonlocal k
        k += 1
        return make_tensor(shape, device=device, dtype=dtype, low=low, high=high, exclude_zero=exclude_zero,
                           seed=seed_for(op, dtype, 1000 * salt + k), **kw)

    for name, shape in (SHAPES if shapes is None else shapes):
        yield name, with_grad(mk(shape), requires_grad)
    if views:
        yield "noncontiguous", with_grad(mk((3, 4), noncontiguous=True), requires_grad)
        yield "transposed", with_grad(mk((4, 3)).t(), requires_grad)
        yield "sliced", with_grad(mk((4, 6))[1:, ::2], requires_grad)


def unary_samples(op, device, dtype, requires_grad=False, low=None, high=None, *, exclude_zero=False,
                  args=(), kwargs=None, shapes=None, views=True):
    """Samples ``op(x, *args, **kwargs)`` for every variant of ``tensor_variants``: 0-dim,
    empty, (5,), (3, 4), non-contiguous, transposed, sliced (7 samples).

    :param low, high: the value range (e.g. ``low=0.1`` for log, ``low=-1, high=1`` for acos).
    :param exclude_zero: no zeros (for reciprocal of integers, ...).
    """
    kwargs = kwargs or {}
    for name, x in tensor_variants(op, device, dtype, requires_grad, low=low, high=high,
                                   exclude_zero=exclude_zero, shapes=shapes, views=views):
        yield SampleInput(x, tuple(args), dict(kwargs), name=name)


def _default_scalar(dtype):
    if dtype.name == "bool":
        return True
    if dtype.is_complex:
        return complex(1.5, -0.5)
    if dtype.is_floating_point:
        return 2.5
    return 3


def binary_samples(op, device, dtype, requires_grad=False, low=None, high=None, *, rhs_low=None, rhs_high=None,
                   rhs_exclude_zero=False, rhs_dtype=None, scalars=True, scalar=None, scalar_lhs=False,
                   kwargs=None, same_shape_only=False):
    """Samples ``op(a, b, **kwargs)``: same shapes ((), (0,), (5,), (3, 4)), broadcasting
    pairs ((3, 4) with (4,), (3, 1) with (1, 4), () with (3, 4), (0, 4) with (4,)), mixed
    layouts (non-contiguous with transposed, sliced with contiguous) and, when ``scalars``,
    a Python scalar ``other`` (12 samples at most).

    :param low, high: range of the first operand; ``rhs_low``, ``rhs_high`` of the second
        (default: the same as the first).
    :param rhs_exclude_zero: no zeros in the second operand (integer divisors).
    :param rhs_dtype: the second operand's dtype name (default: ``dtype``).
    :param scalar: the Python scalar operand (default: 2.5 / 3 / True / 1.5-0.5j by dtype);
        ``scalar_lhs`` adds a sample with the scalar first (``op(scalar, tensor)``).
    :param same_shape_only: no broadcasting samples (for ops that do not broadcast).
    """
    import ember
    kwargs = kwargs or {}
    rdt = dtype if rhs_dtype is None else getattr(ember, rhs_dtype)
    rlo = low if rhs_low is None else rhs_low
    rhi = high if rhs_high is None else rhs_high
    k = 0

    def mk(shape, dt, lo, hi, ez, **kw):
        nonlocal k
        k += 1
        t = make_tensor(shape, device=device, dtype=dt, low=lo, high=hi, exclude_zero=ez,
                        seed=seed_for(op, dtype, k), **kw)
        return t

    def a(shape, **kw):
        return mk(shape, dtype, low, high, False, **kw)

    def b(shape, **kw):
        return mk(shape, rdt, rlo, rhi, rhs_exclude_zero, **kw)

    g = lambda t: with_grad(t, requires_grad)
    pairs = [("0-dim", (), ()), ("empty", (0,), (0,)), ("1-D", (5,), (5,)), ("2-D", (3, 4), (3, 4))]
    if not same_shape_only:
        pairs += [("broadcast (3, 4) (4,)", (3, 4), (4,)), ("broadcast (3, 1) (1, 4)", (3, 1), (1, 4)),
                  ("broadcast () (3, 4)", (), (3, 4)), ("broadcast empty (0, 4) (4,)", (0, 4), (4,))]
    for name, sa, sb in pairs:
        yield SampleInput(g(a(sa)), (g(b(sb)),), dict(kwargs), name=name)
    yield SampleInput(g(a((3, 4), noncontiguous=True)), (g(b((4, 3)).t()),), dict(kwargs),
                      name="noncontiguous, transposed")
    yield SampleInput(g(a((4, 6))[1:, ::2]), (g(b((3, 3))),), dict(kwargs), name="sliced, contiguous")
    if scalars:
        s = _default_scalar(rdt) if scalar is None else scalar
        yield SampleInput(g(a((3, 4))), (s,), dict(kwargs), name="scalar other")
        if scalar_lhs:
            yield SampleInput(s, (g(b((3, 4))),), dict(kwargs), name="scalar self")


def reduction_samples(op, device, dtype, requires_grad=False, low=None, high=None, *, dims=True, keepdim=True,
                      dim_kw="dim", kwargs=None, full=True, empty=True):
    """Samples ``op(x, dim=..., keepdim=...)``: the whole tensor (no ``dim``) for 0-dim,
    (5,), (3, 4) and a transposed (3, 4); and, when ``dims``, dim=int, negative, a tuple
    (``dims="int"`` for ops taking one int only), each with keepdim False/True (when
    ``keepdim``), over contiguous, non-contiguous and sliced inputs; an empty (0, 3)
    reduced over dim 1 (when ``empty``).

    :param dim_kw: the name of the dim argument ("dim"; "axis" style ops may differ).
    :param full: include the whole-tensor reductions (no ``dim`` argument).
    """
    kwargs = kwargs or {}
    k = 0

    def mk(shape, **kw):
        nonlocal k
        k += 1
        return make_tensor(shape, device=device, dtype=dtype, low=low, high=high, seed=seed_for(op, dtype, k), **kw)

    def s(x, d, name):
        return SampleInput(with_grad(x, requires_grad), (), d, name=name)

    if full:
        yield s(mk(()), dict(kwargs), "0-dim, all")
        yield s(mk((5,)), dict(kwargs), "1-D, all")
        yield s(mk((3, 4)), dict(kwargs), "2-D, all")
        yield s(mk((4, 3)).t(), dict(kwargs), "transposed, all")
    if not dims:
        return
    kd = (False, True) if keepdim else (None,)

    def kw(d, keep):
        out = dict(kwargs)
        out[dim_kw] = d
        if keep is not None:
            out["keepdim"] = keep
        return out

    for keep in kd:
        tag = "" if keep is None else f", keepdim={keep}"
        yield s(mk((3, 4)), kw(1, keep), f"dim=1{tag}")
        yield s(mk((2, 3, 4), noncontiguous=True), kw(-2, keep), f"noncontiguous, dim=-2{tag}")
    yield s(mk((4, 6))[1:, ::2], kw(0, kd[0]), "sliced, dim=0")
    yield s(mk(()), kw(0, kd[-1]), "0-dim, dim=0")
    if dims != "int":
        yield s(mk((2, 3, 4)), kw((0, 2), kd[-1]), "dim=(0, 2)")
    if empty:
        yield s(mk((0, 3)), kw(1, kd[0]), "empty, dim=1")


def shape_samples(op, device, dtype, requires_grad=False, cases=(), low=None, high=None):
    """Samples from explicit ``cases``: (name, shape, args, kwargs) with ``shape`` the input's
    shape (a contiguous tensor) or ("noncontiguous" | "transposed", shape) for a view."""
    for i, (name, shape, args, kw) in enumerate(cases):
        layout = None
        if isinstance(shape, tuple) and shape and isinstance(shape[0], str):
            layout, shape = shape
        seed = seed_for(op, dtype, i)
        if layout == "noncontiguous":
            x = make_tensor(shape, device=device, dtype=dtype, low=low, high=high, noncontiguous=True, seed=seed)
        elif layout == "transposed":
            x = make_tensor(tuple(reversed(shape)), device=device, dtype=dtype, low=low, high=high,
                            seed=seed).permute(tuple(reversed(range(len(shape)))))
        else:
            x = make_tensor(shape, device=device, dtype=dtype, low=low, high=high, seed=seed)
        yield SampleInput(with_grad(x, requires_grad), tuple(args), dict(kw), name=name)

"""Op database entries: the shape ops that copy data (cat, flip, roll, repeat,
repeat_interleave with a tensor of counts, tril, triu). Views (reshape, transpose, ...) are no
ops of the dispatcher; they are exercised through every sampler's transposed / sliced inputs."""
from __future__ import annotations

import numpy as np

from .._opinfo import OpInfo, SampleInput, ErrorInput, make_tensor
from .._samples import ALL_DTYPES, seed_for, with_grad

__all__ = ["OPINFOS", "op_db"]


class _Mk:
    def __init__(self, op, device, dtype, requires_grad):
        self.op, self.device, self.dtype, self.rg, self.k = op, device, dtype, requires_grad, 0

    def __call__(self, shape, *, t=False, nc=False, sl=False, dtype=None):
        self.k += 1
        kw = dict(device=self.device, dtype=dtype or self.dtype, seed=seed_for(self.op, self.dtype, self.k))
        if t:
            x = make_tensor(tuple(reversed(shape)), **kw).permute(tuple(reversed(range(len(shape)))))
        elif nc:
            x = make_tensor(shape, noncontiguous=True, **kw)
        elif sl:
            x = make_tensor((shape[0] + 1,) + tuple(shape[1:-1]) + (shape[-1] * 2,), **kw)[1:, ..., ::2]
        else:
            x = make_tensor(shape, **kw)
        return with_grad(x, self.rg)


# ---------------------------------------------------------------- cat
def _cat_ref(tensors, dim=0):
    keep = [t for t in tensors if t.shape != (0,)]      # legacy: 1-D empty tensors are skipped
    dt = np.result_type(*tensors)
    if not keep:
        return np.zeros((0,), dtype=dt)
    return np.concatenate([t.astype(dt) for t in keep], axis=dim % keep[0].ndim)


def _cat_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput([m((2, 3)), m((4, 3))], (), name="dim=0")
    yield SampleInput([m((3, 2)), m((3, 4), t=True), m((3, 1))], (1,), name="dim=1, transposed")
    yield SampleInput([m((2, 3, 4), nc=True), m((2, 3, 4), sl=True)], (-1,), name="noncontiguous, sliced, dim=-1")
    yield SampleInput([m((5,))], (), name="one tensor")
    yield SampleInput([m((2, 3)), m((0, 3)), m((1, 3))], (0,), name="empty part")
    yield SampleInput([m((2, 3)), m((0,))], (1,), name="legacy empty (0,) skipped")
    yield SampleInput([m((0,)), m((0,))], (), name="all empty")
    other = "float64" if not dtype.is_complex else "complex128"
    if dtype.name != other:
        yield SampleInput([m((2, 3)), m((1, 3), dtype=getattr(ember, other))], (), name=f"promotes with {other}")


def _cat_errors(op, device):
    import ember
    a = make_tensor((2, 3), device=device, seed=1)
    yield ErrorInput(SampleInput([a, make_tensor((2, 4), device=device, seed=2)]), RuntimeError,
                     r"Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor "
                     r"number 1 in the list.")
    yield ErrorInput(SampleInput([a, make_tensor((2, 3, 1), device=device, seed=2)]), RuntimeError,
                     r"Tensors must have same number of dimensions: got 2 and 3")
    yield ErrorInput(SampleInput([a, ember.tensor(1.0, device=device)]), RuntimeError,
                     r"zero-dimensional tensor \(at position 1\) cannot be concatenated")
    yield ErrorInput(SampleInput([a], (2,)), IndexError, r"Dimension out of range")


# ---------------------------------------------------------------- flip / roll / repeat
def _flip_ref(a, dims):
    if a.ndim == 0 or not dims:
        return a.copy()
    return np.flip(a, tuple(d % a.ndim for d in dims)).copy()


def _flip_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m(()), ([0],), name="0-dim")
    yield SampleInput(m((0, 3)), ([0],), name="empty")
    yield SampleInput(m((5,)), ([0],), name="1-D")
    yield SampleInput(m((3, 4)), ([0, 1],), name="both dims")
    yield SampleInput(m((2, 3, 4), nc=True), ([-1],), name="noncontiguous, dim=-1")
    yield SampleInput(m((3, 4), t=True), ([1],), name="transposed")
    yield SampleInput(m((3, 4), sl=True), ([0, -1],), name="sliced")
    yield SampleInput(m((3, 4)), ([],), name="no dims")


def _flip_errors(op, device):
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ([0, 0],)), RuntimeError, r"dim 0 appears multiple times in the list of dims")
    yield ErrorInput(SampleInput(x, ([2],)), IndexError, r"Dimension out of range")


def _roll_ref(a, shifts, dims=None):
    if isinstance(shifts, int):
        shifts = (shifts,)
    if isinstance(dims, int):
        dims = (dims,)
    if not dims:
        return np.roll(a.reshape(-1), shifts[0]).reshape(a.shape)
    return np.roll(a, tuple(shifts), tuple(d % max(a.ndim, 1) for d in dims))


def _roll_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((5,)), (2,), name="1-D, flattened")
    yield SampleInput(m((3, 4)), (-5,), name="2-D, flattened, negative shift")
    yield SampleInput(m((3, 4)), (1, 0), name="dim=0")
    yield SampleInput(m((3, 4), t=True), ((1, -2), (0, 1)), name="transposed, two dims")
    yield SampleInput(m((2, 3, 4), nc=True), (7, -1), name="noncontiguous, shift > size")
    yield SampleInput(m((3, 4), sl=True), ((2,), (1,)), name="sliced")
    yield SampleInput(m((0, 3)), (1, 1), name="empty")
    yield SampleInput(m(()), (3,), name="0-dim")
    yield SampleInput(m((3, 4)), ([1, -1], [0, 1]), name="lists")


def _roll_errors(op, device):
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ((1, 2), (0,))), RuntimeError, r"shifts and dimensions must align. shifts: 2, dims:1")
    yield ErrorInput(SampleInput(x, (1, 2)), IndexError, r"Dimension out of range")


def _repeat_ref(a, repeats):
    return np.tile(a, tuple(repeats))


def _repeat_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m(()), ((2, 3),), name="0-dim")
    yield SampleInput(m((3,)), ((2,),), name="1-D")
    yield SampleInput(m((3,)), ((2, 1, 2),), name="new leading dims")
    yield SampleInput(m((3, 4), t=True), ((1, 2),), name="transposed")
    yield SampleInput(m((2, 3, 2), nc=True), ((2, 1, 3),), name="noncontiguous")
    yield SampleInput(m((3, 4), sl=True), ((2, 2),), name="sliced")
    yield SampleInput(m((3, 4)), ((0, 2),), name="zero repeats")
    yield SampleInput(m((0, 2)), ((2, 2),), name="empty")


def _repeat_errors(op, device):
    x = make_tensor((3, 4), device=device, seed=1)
    yield ErrorInput(SampleInput(x, ((2,),)), RuntimeError, r"Number of dimensions of repeat dims can not be smaller "
                     r"than number of dimensions of tensor")
    yield ErrorInput(SampleInput(x, ((2, -1),)), RuntimeError, r"Trying to create tensor with negative dimension -4")


# ---------------------------------------------------------------- repeat_interleave
def _ri_ref(a, repeats, dim=None, *, output_size=None):
    if dim is None:
        return np.repeat(a.reshape(-1), repeats)
    x = a.reshape(1) if a.ndim == 0 else a
    return np.repeat(x, repeats, axis=dim % x.ndim)


def _ri_samples(op, device, dtype, requires_grad=False):
    import ember
    m = _Mk(op, device, dtype, requires_grad)

    def counts(*v, dt=ember.int64):
        return ember.tensor(list(v), dtype=dt, device=device)
    yield SampleInput(m((3,)), (counts(2, 0, 3),), name="1-D")
    yield SampleInput(m((2, 2)), (counts(1, 2, 0, 1),), name="flattened (dim=None)")
    yield SampleInput(m((3, 4)), (counts(1, 0, 2),), {"dim": 0}, name="dim=0")
    yield SampleInput(m((3, 4), t=True), (counts(2, 1, 1, 0, dt=ember.int32),), {"dim": -1},
                      name="transposed, dim=-1, int32 counts")
    yield SampleInput(m((2, 3, 2), nc=True), (counts(3, 1, 0),), {"dim": 1, "output_size": 4},
                      name="noncontiguous, output_size")
    yield SampleInput(m((0, 2)), (counts(),), {"dim": 0}, name="empty")
    yield SampleInput(m((2, 2)), (counts(0, 0),), {"dim": 1}, name="all zero counts")


def _ri_op(input, repeats, dim=None, *, output_size=None):
    import ember
    return ember.repeat_interleave(input, repeats, dim, output_size=output_size)


def _ri_errors(op, device):
    import ember
    x = make_tensor((3,), device=device, seed=1)
    yield ErrorInput(SampleInput(x, (ember.tensor([1, -1, 2], device=device),)), RuntimeError,
                     r"repeats can not be negative")
    yield ErrorInput(SampleInput(x, (ember.tensor([[1, 2, 3]], device=device),)), RuntimeError,
                     r"repeats must be 0-dim or 1-dim tensor")
    yield ErrorInput(SampleInput(x, (ember.tensor([1, 2], device=device),), {"dim": 0}), RuntimeError,
                     r"repeats must have the same size as input along dim")
    yield ErrorInput(SampleInput(x, (ember.tensor([1.0, 2.0, 3.0], device=device),)), RuntimeError,
                     r"\"repeat_interleave\" not implemented for 'Float'")


# ---------------------------------------------------------------- tril / triu
def _tri_samples(op, device, dtype, requires_grad=False):
    m = _Mk(op, device, dtype, requires_grad)
    yield SampleInput(m((4, 4)), (), name="square")
    yield SampleInput(m((3, 5)), (1,), name="wide, diagonal=1")
    yield SampleInput(m((5, 3), t=True), (-1,), name="transposed, diagonal=-1")
    yield SampleInput(m((2, 3, 4), nc=True), (), name="batched, noncontiguous")
    yield SampleInput(m((3, 4), sl=True), (10,), name="sliced, diagonal beyond")
    yield SampleInput(m((3, 4)), (-10,), name="diagonal below everything")
    yield SampleInput(m((0, 3)), (), name="empty")


def _tri_errors(op, device, name):
    yield ErrorInput(SampleInput(make_tensor((3,), device=device, seed=1)), RuntimeError,
                     rf"{name}: input tensor must have at least 2 dimensions")


def _build():
    from functools import partial
    ops = []
    add = ops.append
    ag = dict(supports_autograd=True)
    add(OpInfo("cat", ref=_cat_ref, dtypes=ALL_DTYPES, sample_inputs=_cat_samples, error_inputs=_cat_errors,
               supports_out=True, exact=True, **ag))
    add(OpInfo("flip", ref=_flip_ref, dtypes=ALL_DTYPES, sample_inputs=_flip_samples, error_inputs=_flip_errors,
               exact=True, **ag))
    add(OpInfo("roll", ref=_roll_ref, dtypes=ALL_DTYPES, sample_inputs=_roll_samples, error_inputs=_roll_errors,
               exact=True, **ag))
    add(OpInfo("repeat", op=lambda x, repeats: x.repeat(*repeats), ref=_repeat_ref, dtypes=ALL_DTYPES,
               sample_inputs=_repeat_samples, error_inputs=_repeat_errors, exact=True, **ag))
    add(OpInfo("repeat_interleave_tensor", op=_ri_op, ref=_ri_ref, dtypes=ALL_DTYPES, sample_inputs=_ri_samples,
               error_inputs=_ri_errors, exact=True, **ag))
    add(OpInfo("tril", ref=lambda a, diagonal=0: np.tril(a, diagonal), dtypes=ALL_DTYPES, sample_inputs=_tri_samples,
               error_inputs=partial(_tri_errors, name="tril"), supports_out=True, exact=True,
               inplace=lambda t, *a, **k: t.tril_(*a, **k), **ag))
    add(OpInfo("triu", ref=lambda a, diagonal=0: np.triu(a, diagonal), dtypes=ALL_DTYPES, sample_inputs=_tri_samples,
               error_inputs=partial(_tri_errors, name="triu"), supports_out=True, exact=True,
               inplace=lambda t, *a, **k: t.triu_(*a, **k), **ag))
    return ops


OPINFOS = _build()
op_db = OPINFOS

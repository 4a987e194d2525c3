"""Op-database entries for sparse COO tensors (``ember conformance DEVICE --layout sparse_coo``).

Shipped from the plugin through ``ember_opinfos()`` rather than added to the core's op database:
the samplers build sparse tensors, which only exist with this plugin, and the entries then live
next to the kernels they test. Each entry is a variant ``<op>.sparse_coo`` with no strided
samples (``sample_inputs=None``) and one sampler in ``layout_samplers["sparse_coo"]``; the numpy
reference receives the dense form of every sparse argument (the conformance runner densifies
sparse tensors), so it is the plain dense reference of the op.
"""
from __future__ import annotations

import ember
import numpy as np
from ember.testing import ErrorInput, OpInfo, SampleInput, make_tensor

DTYPES = ("int32", "int64", "float32", "float64")
FLOATS = ("float32", "float64")
V = "sparse_coo"


def sparse_tensor(shape, device, dtype, *, sparse_dim=None, seed=0, density=0.4, uncoalesced=False,
                  requires_grad=False):
    """A random sparse COO tensor: a dense random tensor with about ``density`` of its (sparse) entries
    kept, converted with ``to_sparse``; ``uncoalesced`` splits some entries into duplicate pairs (same
    dense value) and shuffles the order."""
    rng = np.random.default_rng(seed)
    dense = make_tensor(shape, dtype=dtype, seed=seed, low=1, high=9)
    k = len(shape) if sparse_dim is None else sparse_dim
    keep = rng.random(shape[:k]) < density
    mask = ember.tensor(keep.reshape(keep.shape + (1,) * (len(shape) - k)).astype(np.float64)).to(dtype)
    s = (dense * mask).to_sparse(k)
    if uncoalesced and s._nnz() > 1:
        idx, val = s._indices(), s._values()
        m = s._nnz() // 2
        half = val[:m] - val[:m] // 2 if not dtype.is_floating_point else val[:m] * 0.25
        rest = val[:m] - half
        new_idx = ember.cat([idx, idx[:, :m]], 1)
        new_val = ember.cat([ember.cat([rest, val[m:]]), half])
        perm = ember.tensor(rng.permutation(new_idx.shape[1]))
        s = ember.sparse_coo_tensor(new_idx.index_select(1, perm), new_val.index_select(0, perm), shape)
    s = s.to(device)
    if requires_grad:
        s.requires_grad_()
    return s


def _shapes():
    # (name, shape, sparse_dim, uncoalesced)
    return [("2d", (4, 5), 2, False), ("2d uncoalesced", (4, 5), 2, True), ("1d", (7,), 1, False),
            ("hybrid", (3, 4, 2), 2, False), ("empty", (0, 3), 2, False), ("3d uncoalesced", (2, 3, 4), 3, True)]


def _unary_sampler(op, device, dtype, requires_grad=False):
    for i, (name, shape, k, unc) in enumerate(_shapes()):
        yield SampleInput(sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc,
                                        requires_grad=requires_grad), name=name)


def _binary_sampler(kind):
    def sampler(op, device, dtype, requires_grad=False):
        for i, (name, shape, k, unc) in enumerate(_shapes()):
            a = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc, requires_grad=requires_grad)
            b = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i + 10, requires_grad=requires_grad)
            d = make_tensor(shape, device=device, dtype=dtype, seed=i + 20, requires_grad=requires_grad)
            if kind in ("add", "mul"):
                yield SampleInput(a, (b,), name=f"{name} sparse-sparse")
                yield SampleInput(d, (a,), name=f"{name} dense-sparse")
            if kind == "add" and i < 2:
                yield SampleInput(a, (d,), name=f"{name} sparse-dense")
                yield SampleInput(a, (b,), {"alpha": 2}, name=f"{name} alpha")
            if kind == "mul":
                yield SampleInput(a, (d,), name=f"{name} sparse-dense")
                yield SampleInput(a, (3,), name=f"{name} scalar")
    return sampler


def _div_sampler(op, device, dtype, requires_grad=False):
    for i, (name, shape, k, unc) in enumerate(_shapes()):
        a = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc, requires_grad=requires_grad)
        yield SampleInput(a, (4,), name=f"{name} scalar")


def _pow_sampler(op, device, dtype, requires_grad=False):
    for i, (name, shape, k, unc) in enumerate(_shapes()):
        a = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc, requires_grad=requires_grad)
        yield SampleInput(a, (2,), name=name)


def _sum_sampler(op, device, dtype, requires_grad=False):
    for i, (name, shape, k, unc) in enumerate(_shapes()):
        a = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc, requires_grad=requires_grad)
        yield SampleInput(a, (), name=f"{name} all")
        yield SampleInput(a, (0,), name=f"{name} dim 0")
        if len(shape) > 1:
            yield SampleInput(a, (-1,), name=f"{name} last dim")


def _mm_sampler(op, device, dtype, requires_grad=False):
    for i, (n, kk, m, unc) in enumerate([(4, 5, 3, False), (4, 5, 3, True), (6, 2, 1, False), (0, 3, 2, False),
                                         (3, 4, 0, False)]):
        a = sparse_tensor((n, kk), device, dtype, seed=i, uncoalesced=unc, requires_grad=requires_grad)
        d = make_tensor((kk, m), device=device, dtype=dtype, seed=i + 5, requires_grad=requires_grad)
        yield SampleInput(a, (d,), name=f"{n}x{kk} @ {kk}x{m}{' uncoalesced' if unc else ''}")


def _matmul_sampler(op, device, dtype, requires_grad=False):
    yield from _mm_sampler(op, device, dtype, requires_grad)
    a = sparse_tensor((4, 5), device, dtype, seed=9, requires_grad=requires_grad)
    yield SampleInput(a, (make_tensor((5,), device=device, dtype=dtype, seed=3, requires_grad=requires_grad),),
                      name="matrix @ vector")


def _index_select_sampler(op, device, dtype, requires_grad=False):
    for i, (name, shape, k, unc) in enumerate(_shapes()[:4]):
        a = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc, requires_grad=requires_grad)
        idx = ember.tensor([2, 0, 2, 1], device=device)
        yield SampleInput(a, (0, idx), name=f"{name} dim 0 with repeats")
        if len(shape) > 1:
            yield SampleInput(a, (1, ember.tensor([1, 1, 0], device=device)), name=f"{name} dim 1")


def _cat_sampler(op, device, dtype, requires_grad=False):
    for i, (name, shape, k, unc) in enumerate(_shapes()):
        a = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc, requires_grad=requires_grad)
        b = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i + 3, requires_grad=requires_grad)
        yield SampleInput([a, b], (0,), name=f"{name} dim 0")
        if k > 1:
            yield SampleInput([a, b, a], (1,), name=f"{name} dim 1")


def _softmax_sampler(op, device, dtype, requires_grad=False):
    for i, (name, shape, k, unc) in enumerate(_shapes()):
        a = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc, requires_grad=requires_grad)
        yield SampleInput(a, (0,), name=f"{name} dim 0")
        if len(shape) > 1:
            yield SampleInput(a, (-1,), name=f"{name} last dim")


def _np_sparse_softmax(x, dim, log=False):
    # unspecified (zero) entries count as -inf; rows with no entries stay zero
    if x.size == 0:
        return x.copy()
    m = x != 0
    xm = np.where(m, x, -np.inf)
    mx = np.max(xm, axis=dim, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0)
    e = np.where(m, np.exp(xm - mx), 0)
    s = e.sum(axis=dim, keepdims=True)
    if log:
        return np.where(m, xm - mx - np.log(np.where(s > 0, s, 1)), 0)
    return np.where(m, e / np.where(s > 0, s, 1), 0)


def _to_sparse_sampler(op, device, dtype, requires_grad=False):
    for s in _unary_sampler(op, device, dtype, False):
        yield SampleInput(s.input.to_dense().detach(), name=s.name)
    yield SampleInput(make_tensor((3, 4), device=device, dtype=dtype, seed=5), name="no zeros")


def _to_dense_sampler(op, device, dtype, requires_grad=False):
    yield from _unary_sampler(op, device, dtype, requires_grad)


def _geometry_sampler(kind):
    def sampler(op, device, dtype, requires_grad=False):
        for i, (name, shape, k, unc) in enumerate(_shapes()):
            if len(shape) < 2 and kind == "t":
                continue
            a = sparse_tensor(shape, device, dtype, sparse_dim=k, seed=i, uncoalesced=unc,
                              requires_grad=requires_grad)
            if kind == "t":
                if len(shape) == 2:
                    yield SampleInput(a, (), name=name)
            elif kind == "transpose":
                if len(shape) >= 2 and k >= 2:
                    yield SampleInput(a, (0, 1), name=name)
                if len(shape) - k >= 2:
                    yield SampleInput(a, (-1, -2), name=f"{name} dense dims")
            elif kind == "narrow":
                if shape[0] >= 2:
                    yield SampleInput(a, (0, 1, shape[0] - 1), name=f"{name} dim 0")
                if len(shape) > 2:
                    yield SampleInput(a, (-1, 0, 1), name=f"{name} last dim")
    return sampler


def _coo_errors(op, device):
    i = ember.tensor([[0, 5]], device=device)
    v = ember.tensor([1.0, 2.0], device=device)
    yield ErrorInput(SampleInput(i, (v, (3,)), {"check_invariants": True}), RuntimeError,
                     r"size is inconsistent with indices: for dim 0, size is 3 but found index 5")
    yield ErrorInput(SampleInput(ember.tensor([[0, -1]], device=device), (v, (3,)), {"check_invariants": True}),
                     RuntimeError, r"found negative index -1 for dim 0")
    yield ErrorInput(SampleInput(ember.tensor([[0, 1]], device=device), (ember.tensor([1.0, 2, 3], device=device),
                                                                          (3,))),
                     RuntimeError, r"indices and values must have same nnz, but got nnz from indices: 2, nnz from "
                                   r"values: 3")
    yield ErrorInput(SampleInput(ember.tensor([[0, 1]], device=device), (v, (3, 3))), RuntimeError,
                     r"'len\(size\) == sparse_dim \+ dense_dim' is not satisfied: len\(size\) = 2, sparse_dim = 1, "
                     r"dense_dim = 0")
    yield ErrorInput(SampleInput(ember.tensor([0, 1], device=device), (v, (3,))), RuntimeError,
                     r"indices must be sparse_dim x nnz, but got: \[2\]")
    yield ErrorInput(SampleInput(ember.tensor([[True, False]], device=device), (v, (3,))), RuntimeError,
                     r"indices must be an int64 tensor")


def _coo_op(indices, values, size, **kw):
    return ember.sparse_coo_tensor(indices, values, size, **kw)


def _unchecked_errors(op, device):
    # out-of-bounds indices without check_invariants: caught by to_dense / coalesce / mm, never a wrong result
    s = ember.sparse_coo_tensor(ember.tensor([[0, 5]], device=device), ember.tensor([1.0, 2.0], device=device), (3,))
    yield ErrorInput(SampleInput(s), RuntimeError, r"size is inconsistent with indices: for dim 0, size is 3 but "
                                                   r"found index 5")


def _unsupported_errors(op, device):
    s = ember.sparse_coo_tensor(ember.tensor([[0, 1]], device=device), ember.tensor([1.0, 2.0], device=device), (3,))
    yield ErrorInput(SampleInput(s), NotImplementedError, r"Could not run 'exp' with arguments from the "
                                                          r"\(\w+, sparse_coo, float32\) key")


def _mm_errors(op, device):
    s = ember.sparse_coo_tensor(ember.tensor([[0, 1], [1, 2]], device=device), ember.tensor([1.0, 2.0], device=device),
                                (2, 3))
    yield ErrorInput(SampleInput(s, (ember.ones(4, 5, device=device),)), RuntimeError,
                     r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)")
    yield ErrorInput(SampleInput(s, (ember.ones(3, device=device),)), RuntimeError, r"mat2 must be a matrix")


def _through_values(x):
    """``values()`` (differentiable) of the coalesced tensor, rebuilt into a sparse tensor: the identity."""
    c = x.coalesce()
    return ember.sparse_coo_tensor(c.indices(), c.values() * 1, tuple(c.shape), is_coalesced=True)


def _no_samples(op, device, dtype, requires_grad=False):
    """Entries that only check error inputs under --layout sparse_coo."""
    return iter(())


def _ref_sum(x, dim=None):
    r = np.sum(x, axis=dim)
    return r.astype(np.int64) if r.dtype.kind in "iub" else r


def sparse_opinfos():
    """The OpInfo entries (built lazily: records only, no tensors until a sampler runs)."""
    e = []

    def add(name, ref, sampler, *, op=None, dtypes=DTYPES, grad=True, errors=None, tol=None, variant=V):
        e.append(OpInfo(name, op=op, variant=variant, ref=ref, dtypes=dtypes, sample_inputs=None,
                        layout_samplers={"sparse_coo": sampler}, supports_autograd=grad, error_inputs=errors,
                        tolerances=tol or {}))

    def ref_add(a, b, alpha=1):
        return np.add(a, np.multiply(b, alpha))
    add("add", ref_add, _binary_sampler("add"))
    add("sub", lambda a, b, alpha=1: np.subtract(a, np.multiply(b, alpha)), _binary_sampler("add"))
    add("mul", np.multiply, _binary_sampler("mul"))
    add("true_divide", np.true_divide, _div_sampler, dtypes=FLOATS)
    add("pow", np.power, _pow_sampler)
    add("neg", np.negative, _unary_sampler)
    add("abs", np.abs, _unary_sampler)
    add("sqrt", lambda x: np.sqrt(np.abs(x)), lambda o, d, t, r=False: (SampleInput(s.input.abs() if not r else s.input)
                                                                      for s in _unary_sampler(o, d, t, r)),
        op=lambda x: ember.sqrt(x), dtypes=FLOATS, grad=False)
    add("sin", np.sin, _unary_sampler, dtypes=FLOATS)
    add("tanh", np.tanh, _unary_sampler, dtypes=FLOATS)
    add("sum", _ref_sum, _sum_sampler, op=lambda x, *dim: ember.sum(x, *dim))
    add("mm", np.matmul, _mm_sampler, dtypes=FLOATS, errors=_mm_errors)
    add("matmul", np.matmul, _matmul_sampler, dtypes=FLOATS)
    add("index_select", lambda x, dim, idx: np.take(x, idx, axis=dim), _index_select_sampler)
    add("cat", lambda ts, dim: np.concatenate(ts, axis=dim), _cat_sampler, op=lambda ts, dim: ember.cat(ts, dim))
    # the sparse:: ops
    add("sparse_coo_tensor", None, None, op=_coo_op, variant="", grad=False, errors=_coo_errors)
    e[-1].layout_samplers = {"sparse_coo": _no_samples}
    add("sparse_to_dense", lambda x: x, _to_dense_sampler, op=lambda x: x.to_dense(), variant="",
        errors=_unchecked_errors)
    add("sparse_coalesce", lambda x: x, _unary_sampler, op=lambda x: x.coalesce(), variant="")
    add("sparse_values", lambda x: x, _unary_sampler, op=_through_values, variant="")
    add("sparse_mm", np.matmul, _mm_sampler, op=lambda a, b: ember.sparse.mm(a, b), dtypes=FLOATS, variant="",
        errors=_mm_errors)
    add("sparse_sum", _ref_sum, _sum_sampler, op=lambda x, *dim: ember.sparse.sum(x, *dim), variant="")
    add("sparse_softmax", lambda x, dim: _np_sparse_softmax(x, dim), _softmax_sampler,
        op=lambda x, dim: ember.sparse.softmax(x, dim), dtypes=FLOATS, variant="")
    add("sparse_log_softmax", lambda x, dim: _np_sparse_softmax(x, dim, log=True), _softmax_sampler,
        op=lambda x, dim: ember.sparse.log_softmax(x, dim), dtypes=FLOATS, variant="")
    # to_sparse takes a strided tensor: its samples are strided ones (tested by the strided run)
    add("sparse_to_sparse", lambda x: x, None, op=lambda x: x.to_sparse(), variant="", grad=False)
    e[-1].layout_samplers = {}
    e[-1].sample_inputs = _to_sparse_sampler
    add("t", lambda x: np.transpose(x), _geometry_sampler("t"), op=lambda x: x.t())
    add("transpose", lambda x, a, b: np.swapaxes(x, a, b), _geometry_sampler("transpose"),
        op=lambda x, a, b: x.transpose(a, b))
    add("narrow", lambda x, dim, s, n: np.take(x, range(s, s + n), axis=dim), _geometry_sampler("narrow"),
        op=lambda x, dim, s, n: x.narrow(dim, s, n))
    add("exp", None, None, dtypes=FLOATS, grad=False, errors=_unsupported_errors)
    e[-1].layout_samplers = {"sparse_coo": _no_samples}
    return e

"""gradcheck and gradgradcheck (float64, cpu) for the linear-algebra, shape, indexing and view
ops of the core op set, driven by a table of sample inputs (PyTorch's OpInfo style), plus
hand-checked gradients of in-place writes through views (PyTorch's CopySlices semantics).

Every tensor is tiny (at most 12 elements) so the finite differences stay fast. Samples cover
0-dim inputs where the op allows them, broadcasting, non-contiguous inputs (transposed and
sliced with a step) and empty tensors where they mean something.
"""
from __future__ import annotations

import dataclasses
import zlib
from typing import Callable

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

F64 = ember.float64


# ---------------------------------------------------------------- sample inputs
_rng = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _seed(request):
    """The same values for a test however the run is selected or ordered."""
    global _rng
    _rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def _values(shape):
    """Values in [-2, -0.5] U [0.5, 2], distinct (no ties for amax / amin), deterministic."""
    if len(shape) == 1 and isinstance(shape[0], tuple):
        shape = shape[0]                       # leaf(()) is a 0-dim leaf
    n = int(np.prod(shape)) if shape else 1
    v = _rng.uniform(0.5, 2.0, n) * _rng.choice([-1.0, 1.0], n)
    return v.reshape(shape)


def leaf(*shape):
    """A contiguous float64 leaf that requires grad."""
    return ember.tensor(_values(shape), dtype=F64).requires_grad_()


def leaf_t(*shape):
    """A non-contiguous (transposed) float64 leaf of ``shape`` (2-D) that requires grad."""
    rows, cols = shape
    t = ember.tensor(_values((cols, rows)), dtype=F64).t()
    assert not t.is_contiguous()
    return t.requires_grad_()


def leaf_mT(*shape):
    """A non-contiguous batch of transposed matrices (``.mT`` of a contiguous tensor)."""
    t = ember.tensor(_values(shape[:-2] + (shape[-1], shape[-2])), dtype=F64).mT
    assert not t.is_contiguous()
    return t.requires_grad_()


def leaf_step(*shape):
    """A non-contiguous float64 leaf: every other row of a twice-as-long tensor (dim 0 sliced with step 2)."""
    t = ember.tensor(_values((2 * shape[0],) + shape[1:]), dtype=F64)[::2]
    assert not t.is_contiguous() or t.numel() <= 1
    return t.requires_grad_()


def idx(*values):
    return ember.tensor(list(values), dtype=ember.int64)


def mask(*values):
    return ember.tensor(np.array(values, dtype=bool))


@dataclasses.dataclass
class Sample:
    """One call of an op: ``op(*args, **kwargs)``; tensors in ``args`` that require grad are checked."""
    args: tuple                  # inputs: differentiable leaves, index tensors, ints, ...
    kwargs: dict                 # constant keyword arguments
    label: str                   # what this sample exercises (part of the test id)
    tol: dict                    # gradcheck's eps / atol / rtol when the defaults do not fit


def S(*args, label="", tol=None, **kwargs):
    return Sample(args, kwargs, label, tol or {})


@dataclasses.dataclass
class OpCase:
    """An op under test: a callable over the sample's arguments and the samples to call it with."""
    name: str                    # the op, as the test id shows it
    fn: Callable                 # fn(*sample.args, **sample.kwargs) -> Tensor or tuple of Tensors
    samples: Callable            # () -> list of Sample (built lazily: fresh leaves per test)


# ---------------------------------------------------------------- the table
def _matmul_samples():
    return [S(leaf(3), leaf(3), label="1d@1d"),
            S(leaf(3), leaf(3, 2), label="1d@2d"),
            S(leaf(2, 3), leaf(3), label="2d@1d"),
            S(leaf_t(2, 3), leaf(3, 2), label="2d@2d-transposed"),
            S(leaf(2, 1, 2, 3), leaf(3, 3, 1), label="batch-broadcast"),
            S(leaf(3), leaf(2, 3, 2), label="1d@batched"),
            S(leaf(2, 2, 3), leaf(3), label="batched@1d"),
            S(leaf_mT(2, 2, 3), leaf(3, 2), label="mT@2d")]


def _einsum_samples():
    return [S("ij,jk->ik", leaf(2, 3), leaf(3, 2), label="mm"),
            S("bij,bjk->bik", leaf(2, 2, 3), leaf(2, 3, 2), label="bmm"),
            S("i,i->", leaf(4), leaf(4), label="dot"),
            S("ij->j", leaf_t(3, 2), label="sum"),
            S("ij->ji", leaf(2, 3), label="transpose"),
            S("ij,jk", leaf(2, 3), leaf_t(3, 2), label="implicit-output"),
            S("...ij,...jk->...ik", leaf(2, 1, 2, 2), leaf(3, 2, 1), label="ellipsis-broadcast"),
            S("i...->...", leaf(2, 3), label="ellipsis-sum"),
            S("ii->i", leaf(3, 3), label="diagonal"),
            S("ii", leaf_t(3, 3), label="trace"),
            S("i,ii,j->ij", leaf(2), leaf(2, 2), leaf(3), label="three-operands-diagonal"),
            S("ij,ij->ij", leaf(2, 1), leaf(2, 3), label="size-1-broadcast")]


def _scatter_reduce_samples():
    index = ember.tensor([[0, 1, 0], [1, 1, 2]], dtype=ember.int64)
    out = []
    for reduce in ("sum", "mean", "amax", "amin"):
        for include_self in (True, False):
            out.append(S(leaf(2, 3), 1, index, leaf(2, 3), reduce, include_self=include_self,
                         label=f"{reduce}-include_self={include_self}"))
    out.append(S(leaf(3), 0, idx(0, 0, 2, 2), leaf(4), "amax", label="amax-1d-dup"))
    return out


def _index_put_samples():
    return [S(leaf(4), (idx(0, 2),), leaf(2), False, label="1d"),
            S(leaf(4), (idx(0, 2, 0),), leaf(3), True, label="1d-accumulate-dup"),
            S(leaf(3, 2), (idx(0, 2), idx(1, 0)), leaf(2), False, label="2d-pair"),
            S(leaf(3, 2), (idx(1, 1),), leaf(2), True, label="rows-accumulate-broadcast"),
            S(leaf(3, 2), (mask(True, False, True),), leaf(()), False, label="mask-0dim-values"),
            S(leaf_t(3, 2), (idx(-1, 0),), leaf(1, 2), True, label="negative-transposed")]


def _as_strided_samples():
    return [S(leaf(6), (2, 2), (2, 1), 1, label="overlapping-windows-off-1"),
            S(leaf(3, 2), (2, 2), (1, 2), label="transposed")]


def _getitem_samples():
    return [S(leaf(3, 4), 1, label="int"),
            S(leaf(3, 4), (slice(None), -1), label="int-neg"),
            S(leaf(3, 4), (slice(0, 3, 2), slice(1, None, 2)), label="slices-step"),
            S(leaf(2, 3), (None, Ellipsis, 1), label="none-ellipsis"),
            S(leaf(2, 3), (0, 1), label="to-0dim"),
            S(leaf(()), (None,), label="0dim-none"),
            S(leaf(()), Ellipsis, label="0dim-ellipsis"),
            S(leaf_t(3, 2), (slice(1, None), 0), label="transposed"),
            S(leaf(3, 2), slice(2, 2), label="empty")]


def _adv_getitem_samples():
    return [S(leaf(4, 2), idx(3, 0, 3), label="idx-tensor-dup"),
            S(leaf(3, 2), mask(True, False, True), label="mask-rows"),
            S(leaf(2, 3), ember.tensor([[True, False, True], [False, True, True]]), label="mask-full"),
            S(leaf(4), [0, 2], label="list"),
            S(leaf(3, 4), (slice(None), idx(0, 3, 0)), label="slice-idx"),
            S(leaf_step(3, 2), (idx(2, 0), slice(None)), label="step-slice-src"),
            S(leaf(3, 2), idx(), label="empty-idx"),
            S(leaf(3, 2), idx(-1, 0, -1), label="negative"),
            S(leaf(2, 3, 2), (idx(0, 1), slice(None), idx(1, 0)), label="separated-to-front"),
            S(leaf(2, 3, 2), (1, idx(2, 0)), label="int-then-idx"),
            S(leaf(2, 3), (ember.tensor([[0], [1]]), ember.tensor([[2, 0]])), label="broadcast-indices")]


def _getitem(x, index):
    return x[index]


def _copy_into(src, shape):
    dst = ember.zeros(shape, dtype=F64)
    dst.copy_(src)
    return dst


def _to_f32_and_back(x):
    return x.to(ember.float32).to(F64) * 1.0


OPS = [
    # ------------------------------------------------------------ linear algebra
    OpCase("mm", ember.mm, lambda: [S(leaf(2, 3), leaf(3, 2)), S(leaf_t(2, 3), leaf_t(3, 2), label="transposed"),
                                    S(leaf(2, 0), leaf(0, 3), label="empty-k")]),
    OpCase("bmm", ember.bmm, lambda: [S(leaf(2, 2, 3), leaf(2, 3, 2)), S(leaf_mT(2, 2, 3), leaf(2, 3, 1),
                                                                        label="mT")]),
    OpCase("mv", ember.mv, lambda: [S(leaf(2, 3), leaf(3)), S(leaf_t(2, 3), leaf_step(3), label="noncontig")]),
    OpCase("dot", ember.dot, lambda: [S(leaf(4), leaf(4)), S(leaf_step(3), leaf(3), label="step"),
                                      S(leaf(0), leaf(0), label="empty")]),
    OpCase("vdot", ember.vdot, lambda: [S(leaf(4), leaf(4)), S(leaf(3), leaf_step(3), label="step")]),
    OpCase("matmul", ember.matmul, _matmul_samples),
    OpCase("addmm", ember.addmm, lambda: [
        S(leaf(2, 2), leaf(2, 3), leaf(3, 2)),
        S(leaf(2), leaf(2, 3), leaf_t(3, 2), beta=0.5, alpha=-2.0, label="broadcast-alpha-beta"),
        S(leaf(()), leaf(2, 3), leaf(3, 2), beta=2, label="0dim-self")]),
    OpCase("addmv", ember.addmv, lambda: [
        S(leaf(2), leaf(2, 3), leaf(3)),
        S(leaf(()), leaf_t(2, 3), leaf(3), beta=-1.5, alpha=3.0, label="0dim-alpha-beta")]),
    OpCase("addbmm", ember.addbmm, lambda: [
        S(leaf(2, 2), leaf(2, 2, 3), leaf(2, 3, 2)),
        S(leaf(1, 2), leaf(2, 2, 3), leaf_mT(2, 3, 2), beta=0.5, alpha=2.0, label="broadcast-alpha-beta")]),
    OpCase("baddbmm", ember.baddbmm, lambda: [
        S(leaf(2, 2, 2), leaf(2, 2, 3), leaf(2, 3, 2)),
        S(leaf(2, 1), leaf(2, 2, 3), leaf(2, 3, 2), beta=-1.0, alpha=0.5, label="broadcast-alpha-beta")]),
    OpCase("einsum", ember.einsum, _einsum_samples),
    OpCase("outer", ember.outer, lambda: [S(leaf(3), leaf(2)), S(leaf_step(2), leaf(3), label="step")]),
    OpCase("inner", ember.inner, lambda: [S(leaf(3), leaf(3)), S(leaf(2, 3), leaf(2, 3), label="2d"),
                                          S(leaf(()), leaf(2, 2), label="0dim")]),
    OpCase("tensordot", ember.tensordot, lambda: [
        S(leaf(2, 3), leaf(3, 2), dims=1), S(leaf(2, 3), leaf(2, 3), dims=([0, 1], [0, 1]), label="full"),
        S(leaf(2, 2), leaf(3), dims=0, label="outer")]),
    OpCase("kron", ember.kron, lambda: [S(leaf(2, 2), leaf(2, 3)), S(leaf(2), leaf(3), label="1d")]),
    # ------------------------------------------------------------ joining, reordering, repeating
    OpCase("cat", lambda *ts, dim=0: ember.cat(list(ts), dim), lambda: [
        S(leaf(2, 2), leaf(1, 2)), S(leaf(2, 1), leaf_t(2, 3), leaf(2, 2), dim=-1, label="three-dim-1"),
        S(leaf(2), leaf(0), leaf(3), label="empty"),
        S(leaf(2, 2), leaf(0), leaf(1, 2), label="legacy-1d-empty-skipped")]),
    OpCase("stack", lambda *ts, dim=0: ember.stack(list(ts), dim), lambda: [
        S(leaf(2, 2), leaf_t(2, 2)), S(leaf(3), leaf(3), dim=1, label="dim1"), S(leaf(()), leaf(()), label="0dim")]),
    OpCase("hstack", lambda *ts: ember.hstack(list(ts)), lambda: [S(leaf(2, 1), leaf(2, 2)),
                                                                 S(leaf(2), leaf(3), label="1d")]),
    OpCase("vstack", lambda *ts: ember.vstack(list(ts)), lambda: [S(leaf(1, 3), leaf(2, 3)),
                                                                 S(leaf(3), leaf(3), label="1d")]),
    OpCase("flip", ember.flip, lambda: [S(leaf(2, 3), [0]), S(leaf_t(2, 3), [0, 1], label="both-transposed"),
                                        S(leaf(()), [], label="0dim")]),
    OpCase("roll", ember.roll, lambda: [S(leaf(2, 3), 1, label="flat"), S(leaf(2, 3), (1, -2), (0, 1), label="dims"),
                                        S(leaf_step(3), 2, 0, label="step")]),
    OpCase("repeat", lambda x, *r: x.repeat(*r), lambda: [S(leaf(2), 2, 3), S(leaf(2, 1), 1, 2, label="2d"),
                                                        S(leaf(()), 3, label="0dim")]),
    OpCase("tile", ember.tile, lambda: [S(leaf(2, 1), (2, 2)), S(leaf(3), (2,), label="1d")]),
    OpCase("repeat_interleave", ember.repeat_interleave, lambda: [
        S(leaf(3), 2, label="int"), S(leaf(2, 2), 2, dim=1, label="int-dim"),
        S(leaf(3), idx(1, 0, 2), label="tensor"), S(leaf(2, 2), idx(2, 1), dim=0, label="tensor-dim"),
        S(leaf_t(2, 2), idx(0, 3), dim=1, label="tensor-dim-transposed")]),
    OpCase("tril", ember.tril, lambda: [S(leaf(3, 3)), S(leaf(3, 4), -1, label="diag-1"),
                                        S(leaf_t(3, 2), 1, label="transposed")]),
    OpCase("triu", ember.triu, lambda: [S(leaf(3, 3)), S(leaf(2, 3, 2), 1, label="batched")]),
    OpCase("diff", ember.diff, lambda: [S(leaf(4)), S(leaf(3, 3), n=2, dim=0, label="n2-dim0"),
                                        S(leaf(3), prepend=leaf(2), append=leaf(1), label="prepend-append")]),
    # ------------------------------------------------------------ indexing ops
    OpCase("take", ember.take, lambda: [S(leaf(2, 3), idx(0, 5, -1, 0)),
                                        S(leaf_t(2, 2), ember.tensor([[3, 1]]), label="2d-index-transposed")]),
    OpCase("gather", ember.gather, lambda: [
        S(leaf(2, 3), 1, ember.tensor([[0, 0], [2, 1]])), S(leaf(3), 0, idx(2, 2, 0), label="1d-dup"),
        S(leaf(()), 0, ember.tensor(0), label="0dim")]),
    OpCase("index_select", ember.index_select, lambda: [
        S(leaf(3, 2), 0, idx(2, 0, 2)), S(leaf_t(2, 3), 1, idx(1), label="transposed"),
        S(leaf(()), 0, idx(0), label="0dim"), S(leaf(3, 2), 0, idx(), label="empty")]),
    OpCase("index_add", ember.index_add, lambda: [
        S(leaf(3, 2), 0, idx(0, 2, 0), leaf(3, 2)), S(leaf(2, 3), 1, idx(1), leaf(2, 1), alpha=-2.5, label="alpha"),
        S(leaf(()), 0, idx(0), leaf(()), alpha=2, label="0dim")]),
    OpCase("index_copy", ember.index_copy, lambda: [S(leaf(3, 2), 0, idx(2, 0), leaf(2, 2)),
                                                    S(leaf(4), 0, idx(1), leaf(1), label="1d"),
                                                    S(leaf(()), 0, idx(0), leaf(()), label="0dim")]),
    OpCase("index_fill", ember.index_fill, lambda: [S(leaf(3, 2), 1, idx(0), 2.5),
                                                    S(leaf_t(3, 2), 0, idx(0, 2), -1.0, label="transposed"),
                                                    S(leaf(()), 0, idx(0), 1.0, label="0dim")]),
    OpCase("index_put", ember.index_put, _index_put_samples),
    OpCase("getitem-advanced", _getitem, _adv_getitem_samples),
    OpCase("masked_fill", ember.masked_fill, lambda: [
        S(leaf(2, 3), ember.tensor([[True, False, True], [False, False, True]]), 0.5),
        S(leaf(2, 3), mask(True, False, False), 1.0, label="broadcast-mask"),
        S(leaf(()), ember.tensor(True), 3.0, label="0dim")]),
    OpCase("masked_scatter", ember.masked_scatter, lambda: [
        S(leaf(2, 3), ember.tensor([[True, False, True], [False, True, False]]), leaf(4)),
        S(leaf(2, 2), mask(False, True), leaf(2, 2), label="broadcast-mask-longer-source")]),
    OpCase("masked_select", ember.masked_select, lambda: [
        S(leaf(2, 3), ember.tensor([[True, False, True], [False, True, False]])),
        S(leaf(2, 1), mask(True, False, True), label="broadcast-self"),
        S(leaf(2, 2), mask(False, False), label="none-selected")]),
    OpCase("scatter", ember.scatter, lambda: [
        S(leaf(2, 3), 1, ember.tensor([[2, 0], [1, 2]]), leaf(2, 2)),
        S(leaf(4), 0, idx(3, 1), leaf_step(2), label="1d-step-src")]),
    OpCase("scatter_add", ember.scatter_add, lambda: [
        S(leaf(2, 3), 1, ember.tensor([[2, 0, 2], [1, 1, 1]]), leaf(2, 3)),
        S(leaf(3), 0, idx(0, 0), leaf_step(2), label="step-src")]),
    OpCase("scatter_reduce", ember.scatter_reduce, _scatter_reduce_samples),
    # ------------------------------------------------------------ views
    OpCase("view", lambda x, *s: x.view(*s), lambda: [S(leaf(2, 3), 3, 2), S(leaf(2, 3), -1, label="flat"),
                                                     S(leaf(()), 1, 1, label="0dim"), S(leaf(1), (), label="to-0dim")]),
    OpCase("reshape", ember.reshape, lambda: [S(leaf(2, 3), (3, 2), label="view"),
                                              S(leaf_t(2, 3), (6,), label="copy"),
                                              S(leaf_step(2, 3), (3, 2), label="copy-step"),
                                              S(leaf(0, 2), (2, 0), label="empty")]),
    OpCase("flatten", ember.flatten, lambda: [S(leaf(2, 2, 3), label="all"), S(leaf(2, 3, 2), 1, label="from-1"),
                                              S(leaf_t(3, 2), label="copy"), S(leaf(()), label="0dim")]),
    OpCase("unflatten", ember.unflatten, lambda: [S(leaf(6), 0, (2, 3)), S(leaf(2, 4), -1, (2, -1), label="neg")]),
    OpCase("squeeze", ember.squeeze, lambda: [S(leaf(1, 3, 1), label="all"), S(leaf(2, 1), 1, label="dim"),
                                              S(leaf(2, 3), 0, label="noop"), S(leaf(1), label="to-0dim")]),
    OpCase("unsqueeze", ember.unsqueeze, lambda: [S(leaf(2, 3), 1), S(leaf(()), 0, label="0dim"),
                                                  S(leaf_t(2, 2), -1, label="transposed")]),
    OpCase("transpose", ember.transpose, lambda: [S(leaf(2, 3), 0, 1), S(leaf(2, 1, 3), -1, 0, label="3d")]),
    OpCase("t", ember.t, lambda: [S(leaf(2, 3)), S(leaf(3), label="1d"), S(leaf(()), label="0dim")]),
    OpCase("T", lambda x: x.T, lambda: [S(leaf(2, 3)), S(leaf(2, 1, 3), label="3d")]),
    OpCase("mT", lambda x: x.mT, lambda: [S(leaf(2, 2, 3)), S(leaf_t(2, 3), label="transposed")]),
    OpCase("permute", ember.permute, lambda: [S(leaf(2, 1, 3), (2, 0, 1)), S(leaf(2, 3), (-1, 0), label="neg")]),
    OpCase("movedim", ember.movedim, lambda: [S(leaf(2, 1, 3), 0, -1), S(leaf(2, 3, 2), (0, 1), (2, 0), label="seq")]),
    OpCase("expand", lambda x, *s: x.expand(*s), lambda: [S(leaf(3, 1), 3, 2), S(leaf(2), 2, -1, label="new-dim"),
                                                         S(leaf(()), 2, 3, label="0dim")]),
    OpCase("expand_as", lambda x, y: x.expand_as(y), lambda: [S(leaf(1, 3), ember.zeros(2, 3, dtype=F64))]),
    OpCase("broadcast_to", ember.broadcast_to, lambda: [S(leaf(1, 2), (3, 2)), S(leaf(()), (2,), label="0dim")]),
    OpCase("narrow", ember.narrow, lambda: [S(leaf(4, 2), 0, 1, 2), S(leaf_t(2, 3), 1, 1, 2, label="transposed"),
                                            S(leaf(3), 0, 1, 0, label="empty")]),
    OpCase("select", ember.select, lambda: [S(leaf(3, 2), 0, 1), S(leaf(3, 2), -1, -1, label="neg"),
                                            S(leaf(3), 0, 2, label="to-0dim")]),
    OpCase("unbind", ember.unbind, lambda: [S(leaf(3, 2)), S(leaf_t(3, 2), 1, label="dim1-transposed")]),
    OpCase("split", ember.split, lambda: [S(leaf(5, 2), 2), S(leaf(5), [1, 4], label="sizes"),
                                          S(leaf(2, 3), 2, 1, label="dim1")]),
    OpCase("chunk", ember.chunk, lambda: [S(leaf(5, 2), 3), S(leaf_step(4), 2, label="step")]),
    OpCase("unfold", lambda x, *a: x.unfold(*a), lambda: [S(leaf(5), 0, 2, 1, label="overlapping"),
                                                         S(leaf(2, 5), 1, 2, 2, label="step"),
                                                         S(leaf(()), 0, 1, 1, label="0dim")]),
    OpCase("diagonal", ember.diagonal, lambda: [S(leaf(3, 3)), S(leaf(3, 4), 1, label="offset"),
                                                S(leaf(2, 2, 3), -1, 0, 2, label="3d-neg-offset"),
                                                S(leaf(2, 2), 5, label="empty")]),
    OpCase("as_strided", ember.as_strided, _as_strided_samples),
    OpCase("getitem-basic", _getitem, _getitem_samples),
    # ------------------------------------------------------------ composites of the ops above
    OpCase("addr", ember.addr, lambda: [S(leaf(2, 3), leaf(2), leaf(3), beta=0.5, alpha=2.0),
                                        S(leaf(()), leaf(2), leaf_step(2), label="0dim-self")]),
    OpCase("chain_matmul", ember.chain_matmul, lambda: [S(leaf(2, 3), leaf(3, 2), leaf_t(2, 2))]),
    OpCase("linalg.vecdot", ember.linalg.vecdot, lambda: [S(leaf(2, 3), leaf(3), label="broadcast")]),
    OpCase("linalg.matmul", ember.linalg.matmul, lambda: [S(leaf(2, 3), leaf(3))]),
    OpCase("take_along_dim", ember.take_along_dim, lambda: [
        S(leaf(2, 3), ember.tensor([[0, 2], [1, 1]]), 1), S(leaf(2, 3), idx(5, 0), label="flat")]),
    OpCase("rot90", ember.rot90, lambda: [S(leaf(2, 3)), S(leaf(2, 3), 3, label="k3")]),
    OpCase("fliplr-flipud", lambda x: (ember.fliplr(x), ember.flipud(x)), lambda: [S(leaf_t(2, 3))]),
    OpCase("dstack-column_stack", lambda a, b: (ember.dstack([a, b]), ember.column_stack([a, b])),
           lambda: [S(leaf(3), leaf(3))]),
    OpCase("meshgrid", lambda a, b: ember.meshgrid(a, b, indexing="ij"), lambda: [S(leaf(2), leaf(3))]),
    OpCase("broadcast_tensors", ember.broadcast_tensors, lambda: [S(leaf(2, 1), leaf(3), leaf(()))]),
    OpCase("atleast_2d", ember.atleast_2d, lambda: [S(leaf(())), S(leaf(3), label="1d")]),
    OpCase("tensor_split", ember.tensor_split, lambda: [S(leaf(5), 3), S(leaf(2, 4), [1, 3], 1, label="indices")]),
    OpCase("hsplit", ember.hsplit, lambda: [S(leaf(2, 4), 2)]),
    OpCase("ravel", ember.ravel, lambda: [S(leaf_t(2, 3))]),
    OpCase("adjoint", ember.adjoint, lambda: [S(leaf(2, 3))]),
    OpCase("swapaxes", ember.swapaxes, lambda: [S(leaf(2, 1, 3), 0, 2)]),
    OpCase("view_as-reshape_as", lambda x, y: (x.view_as(y), x.reshape_as(y)),
           lambda: [S(leaf(2, 3), ember.zeros(3, 2))]),
    OpCase("clone", ember.clone, lambda: [S(leaf(2, 3)), S(leaf_t(2, 3), label="transposed"), S(leaf(()), label="0d")]),
    OpCase("contiguous", lambda x: x.contiguous(), lambda: [S(leaf(2, 3), label="already"),
                                                           S(leaf_t(2, 3), label="transposed"),
                                                           S(leaf_step(2, 2), label="step")]),
    # float32 rounding (~1e-7) needs a larger finite-difference step
    OpCase("to-float32-and-back", _to_f32_and_back, lambda: [S(leaf(2, 3), tol=dict(eps=1e-3, atol=1e-3))]),
    OpCase("copy_", _copy_into, lambda: [S(leaf(2, 3), (2, 3)), S(leaf(3), (2, 3), label="broadcast"),
                                         S(leaf_t(2, 2), (2, 2), label="transposed"), S(leaf(()), (2,), label="0dim")]),
]

_CASES = [pytest.param(op, i, id=f"{op.name}-{s.label or i}") for op in OPS for i, s in enumerate(op.samples())]


def _run(op, sample):
    return lambda *args: op.fn(*args, **sample.kwargs)


@pytest.mark.parametrize("op, i", _CASES)
def test_gradcheck(op, i):
    sample = op.samples()[i]
    assert gradcheck(_run(op, sample), sample.args, **sample.tol)


@pytest.mark.parametrize("op, i", _CASES)
def test_gradgradcheck(op, i):
    sample = op.samples()[i]
    assert gradgradcheck(_run(op, sample), sample.args, **sample.tol)


# ---------------------------------------------------------------- detach and copy_
def test_detach_stops_gradient():
    x = leaf(2, 3)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    y = x * 2 + d * 5                   # only the first term reaches x
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))
    assert not (d * 3).requires_grad


def test_copy_into_history_gives_no_gradient_to_the_overwritten_value():
    x, src = leaf(2, 3), leaf(3)
    y = x * 1
    y.copy_(src)                        # y's old value (x) is overwritten entirely
    (y * ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=F64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(src.grad.numpy(), [5.0, 7.0, 9.0])    # summed over the broadcast rows


# ---------------------------------------------------------------- in-place writes through views (CopySlices)
def _np(t):
    return t.detach().numpy().copy()


C = np.arange(1.0, 9.0).reshape(2, 4)          # weights of the loss: distinct, so every path shows


def _writes_through_views(x, w, v):
    """y = x * 1; y[1:3] = w * 2; y[idx] = v; y[mask] += 1; y.t_(); the weighted sum of y."""
    y = x * 1
    y[1:3] = w * 2
    y[idx(2, 0)] = v
    y[ember.tensor([[True, False], [False, True], [True, True], [False, False]])] += 1
    y.t_()
    return (y * ember.tensor(C, dtype=F64)).sum()


def test_setitem_chain_gradients_by_hand():
    x, w, v = leaf(4, 2), leaf(2, 2), leaf(2, 2)
    _writes_through_views(x, w, v).backward()
    g = C.T                                    # d loss / d y before the in-place transpose
    x_grad = np.zeros((4, 2))
    x_grad[3] = g[3]                           # rows 0, 1, 2 were overwritten
    w_grad = 2 * g[1:3].copy()
    w_grad[1] = 0                              # y[2] = w[1] * 2 was then overwritten by v[0]
    np.testing.assert_allclose(_np(x.grad), x_grad)
    np.testing.assert_allclose(_np(w.grad), w_grad)
    np.testing.assert_allclose(_np(v.grad), g[[2, 0]])


def test_setitem_chain_gradcheck():
    args = (leaf(4, 2), leaf(2, 2), leaf(2, 2))
    assert gradcheck(_writes_through_views, args)
    assert gradgradcheck(_writes_through_views, args)


def test_view_written_in_place_then_base_used():
    x, w = leaf(3, 2), leaf(3)
    y = x * 1
    col = y[:, 1]
    col.mul_(w)                                # rewrites the base's history (CopySlices)
    assert y.grad_fn.name() == "CopySlices"
    c = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    (y * ember.tensor(c, dtype=F64)).sum().backward()
    x_grad = c.copy()
    x_grad[:, 1] *= _np(w)
    np.testing.assert_allclose(_np(x.grad), x_grad)
    np.testing.assert_allclose(_np(w.grad), c[:, 1] * _np(x)[:, 1])


def test_two_views_one_written_other_used_after():
    x = leaf(2, 3)
    y = x * 1
    row, col = y[0], y[:, 0]                   # overlap at y[0, 0]
    row.mul_(2)
    (col * ember.tensor([10.0, 20.0], dtype=F64)).sum().backward()   # col sees the write
    expected = np.zeros((2, 3))
    expected[0, 0], expected[1, 0] = 20.0, 20.0
    np.testing.assert_allclose(_np(x.grad), expected)
    np.testing.assert_allclose(_np(col), [2 * _np(x)[0, 0], _np(x)[1, 0]])


def test_two_views_gradcheck():
    def f(x, w):
        y = x * 1
        a, b = y[0], y.t()[1]                  # b is column 1, non-contiguous
        a.mul_(w)
        return b * 3, y
    assert gradcheck(f, (leaf(2, 3), leaf(3)))
    assert gradgradcheck(f, (leaf(2, 3), leaf(3)))


def test_written_view_of_view_with_step():
    def f(x, w):
        y = x * 1
        v = y.t()[:, ::2]                      # shape (2, 2), strides (1, 4)
        v.add_(w * w)
        return y
    assert gradcheck(f, (leaf(4, 2), leaf(2, 2)))
    assert gradgradcheck(f, (leaf(4, 2), leaf(2, 2)))


# ---------------------------------------------------------------- in-place view ops (t_, transpose_, ...)
@pytest.mark.parametrize("call", ["t_()", "transpose_(0, 1)", "squeeze_()", "unsqueeze_(0)"])
def test_inplace_view_on_leaf_requiring_grad_raises(call):
    x = leaf(2, 3)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        eval(f"x.{call}")
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        eval(f"x[0:1].{call}")
    with ember.no_grad():                      # allowed outside grad mode, as in PyTorch
        eval(f"x.{call}")
    assert x.grad_fn is None


@pytest.mark.parametrize("call, name, shape", [
    ("t_()", "TBackward1", (3, 2)), ("transpose_(1, 0)", "TransposeBackward1", (3, 2)),
    ("unsqueeze_(1)", "UnsqueezeBackward1", (2, 1, 3)), ("squeeze_()", "SqueezeBackward3", (2, 3)),
    ("squeeze_(1)", "SqueezeBackward4", (2, 3)), ("squeeze_((0, 1))", "SqueezeBackward5", (2, 3))])
def test_inplace_view_records_node(call, name, shape):
    x = leaf(2, 3)
    y = x * 1
    if call.startswith("squeeze"):
        y = y.unsqueeze(1)
    v = y._version
    assert eval(f"y.{call}") is y
    assert y.shape == shape and y.grad_fn.name() == name and y._version == v + 1
    g = np.arange(6.0).reshape(shape)
    y.backward(ember.tensor(g, dtype=F64))
    expected = g.reshape(2, 3) if len(shape) != 2 or shape == (2, 3) else g.T
    np.testing.assert_array_equal(_np(x.grad), expected)


def test_inplace_view_on_plain_tensor():
    a = ember.arange(6.0).reshape(2, 3)
    assert a.t_() is a and a.shape == (3, 2) and a.grad_fn is None
    np.testing.assert_array_equal(a.numpy(), np.arange(6.0).reshape(2, 3).T)
    a.unsqueeze_(0).transpose_(0, 2)
    assert a.shape == (2, 3, 1)
    a.squeeze_(-1)
    np.testing.assert_array_equal(a.numpy(), np.arange(6.0).reshape(2, 3))


def test_inplace_transpose_of_view_then_write():
    """t_ on a view keeps it a view of its base, so a later write reaches the base at the new geometry."""
    x, w = leaf(3, 3), leaf(2, 2)
    y = x * 1
    v = y[:2, :2]
    v.t_()
    assert v._base is y and not v.is_contiguous()
    v.mul_(w)                                  # y[j, i] *= w[i, j] for i, j < 2
    c = np.arange(1.0, 10.0).reshape(3, 3)
    (y * ember.tensor(c, dtype=F64)).sum().backward()
    x_grad, w_grad = c.copy(), np.zeros((2, 2))
    xv, wv = _np(x), _np(w)
    for i in range(2):
        for j in range(2):
            x_grad[j, i] = c[j, i] * wv[i, j]
            w_grad[i, j] = c[j, i] * xv[j, i]
    np.testing.assert_allclose(_np(x.grad), x_grad)
    np.testing.assert_allclose(_np(w.grad), w_grad)


def test_inplace_view_ops_gradcheck():
    def f(x):
        y = x * x
        y.t_()
        y.unsqueeze_(0)
        y.transpose_(0, 2)
        y.squeeze_()
        return y * ember.arange(1.0, 3.0, dtype=F64)      # y is (3, 2) again, transposed twice
    assert gradcheck(f, (leaf(3, 2),))
    assert gradgradcheck(f, (leaf(3, 2),))


def test_inplace_view_invalidates_saved_tensor():
    """The version bump makes a backward that saved the old geometry fail loudly (as PyTorch)."""
    x = leaf(2, 3)
    y = x * 1
    z = y * y                                  # saves y
    y.t_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_scatter_reduce_amax_ties_share_the_gradient():
    """As PyTorch: a maximum reached by several elements (self and src) gets its gradient split evenly."""
    x = ember.tensor([1.0, 5.0], dtype=F64).requires_grad_()
    src = ember.tensor([5.0, 2.0, 5.0], dtype=F64).requires_grad_()
    out = x.scatter_reduce(0, idx(1, 0, 1), src, "amax")
    np.testing.assert_array_equal(_np(out), [2.0, 5.0])
    out.backward(ember.tensor([10.0, 30.0], dtype=F64))
    np.testing.assert_array_equal(_np(x.grad), [0.0, 10.0])          # x[0] lost to src[1]; x[1] ties 3 ways
    np.testing.assert_array_equal(_np(src.grad), [10.0, 10.0, 10.0])
    x.grad = src.grad = None
    out = x.scatter_reduce(0, idx(1, 0, 1), src, "amax", include_self=False)
    out.backward(ember.tensor([10.0, 30.0], dtype=F64))
    np.testing.assert_array_equal(_np(x.grad), [0.0, 0.0])           # both positions were written
    np.testing.assert_array_equal(_np(src.grad), [15.0, 10.0, 15.0])


def test_scatter_reduce_mean_without_self_by_hand():
    x = ember.tensor([1.0, 2.0, 3.0], dtype=F64).requires_grad_()
    src = ember.tensor([4.0, 6.0, 8.0], dtype=F64).requires_grad_()
    out = x.scatter_reduce(0, idx(0, 0, 2), src, "mean", include_self=False)
    np.testing.assert_array_equal(_np(out), [5.0, 2.0, 8.0])
    out.backward(ember.tensor([1.0, 2.0, 3.0], dtype=F64))
    np.testing.assert_array_equal(_np(x.grad), [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(_np(src.grad), [0.5, 0.5, 3.0])

"""Shape ops against numpy references: cat / stack family, flip, roll, rot90, repeat, tile,
repeat_interleave, tril / triu, diff, meshgrid, broadcasting helpers, atleast_*d and the
module-level view functions; dtypes, empty and 0-dim inputs, non-contiguous inputs, out=,
in-place variants, composites and error messages."""
import numpy as np
import pytest

import ember

RNG = np.random.default_rng(1)
DTYPES = [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64, ember.int8, ember.bool,
          ember.complex64]


def arr(shape, dtype=ember.float64):
    if dtype is ember.bool:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.is_floating_point or dtype.is_complex:
        return RNG.integers(-8, 9, shape).astype(np.float64)   # exact in every float dtype
    return RNG.integers(-8, 9, shape)


def mk(a, dtype=ember.float64):
    a = np.asarray(a)
    if a.ndim == 0:
        return ember.full((), a.item(), dtype=dtype)
    return ember.tensor(a, dtype=dtype)


def val(t):
    a = np.asarray(t.numpy())
    return a.astype(np.float64) if t.dtype is ember.bfloat16 else a


def same(t, expected, dtype=None):
    if dtype is not None:
        assert t.dtype is dtype
    assert tuple(t.shape) == np.shape(expected)
    np.testing.assert_array_equal(val(t), np.asarray(expected))


# ---------------------------------------------------------------- cat and friends
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_dtypes_and_dims(dtype, dim):
    a, b = arr((2, 3), dtype), arr((2, 3), dtype)
    same(ember.cat([mk(a, dtype), mk(b, dtype)], dim), np.concatenate([a, b], dim), dtype)


def test_cat_promotes_skips_empty_and_noncontiguous():
    a, b = arr((2, 3)), arr((2, 3), ember.int64)
    same(ember.cat([mk(a), mk(b, ember.int64)]), np.concatenate([a, b]), ember.float64)
    same(ember.cat([mk(b, ember.int64), mk(b > 0, ember.bool)]), np.concatenate([b, b > 0]), ember.int64)
    same(ember.cat([mk(b, ember.int64), mk(a, ember.float16)]), np.concatenate([b, a]), ember.float16)
    same(ember.cat([ember.ones(0), mk(a)]), a, ember.float64)
    same(ember.cat([ember.ones(0, dtype=ember.float64), mk(a, ember.float32)]), a, ember.float64)
    same(ember.cat([ember.ones(0), ember.ones(0)]), np.ones(0))
    same(ember.cat([mk(a).t(), mk(b, ember.int64).t()], 1), np.concatenate([a.T, b.T], 1))
    e = mk(arr((1, 3))).expand(4, 3)
    same(ember.cat([e, mk(a)]), np.concatenate([np.broadcast_to(e.numpy(), (4, 3)), a]))
    same(ember.concat([mk(a), mk(a)], 1), np.concatenate([a, a], 1))
    same(ember.concatenate((mk(a), mk(a)), axis=1), np.concatenate([a, a], 1))
    same(ember.cat([mk(a), mk(arr((0, 3)))]), a)


def test_cat_out():
    a = arr((2, 3))
    out = ember.empty(4, 3, dtype=ember.float64)
    assert ember.cat([mk(a), mk(a)], out=out) is out
    same(out, np.concatenate([a, a]))
    out32 = ember.empty(4, 3, dtype=ember.float64)
    ember.cat([mk(a, ember.float32), mk(a, ember.float32)], out=out32)
    same(out32, np.concatenate([a, a]))
    with pytest.raises(TypeError, match="input types can't be cast to the desired output type Long"):
        ember.cat([mk(a), mk(a)], out=ember.empty(4, 3, dtype=ember.int64))


@pytest.mark.parametrize("tensors,dim,cls,msg", [
    ([(2, 2), (2, 3)], 0, RuntimeError, "Sizes of tensors must match except in dimension 0. Expected size 2 but got "
                                        "size 3 for tensor number 1 in the list."),
    ([(2, 2), (3, 3)], 1, RuntimeError, "Sizes of tensors must match except in dimension 1. Expected size 2 but got "
                                        "size 3 for tensor number 1 in the list."),
    ([(2, 2), (2,)], 0, RuntimeError, "Tensors must have same number of dimensions: got 2 and 1"),
    ([(), (2, 2)], 0, RuntimeError, r"zero-dimensional tensor \(at position 0\) cannot be concatenated"),
    ([(2, 2), (2, 2)], 2, IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    ([], 0, ValueError, "expected a non-empty list of Tensors"),
])
def test_cat_errors(tensors, dim, cls, msg):
    with pytest.raises(cls, match=msg):
        ember.cat([mk(arr(s)) for s in tensors], dim)


def test_cat_type_errors():
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got int"):
        ember.cat((ember.ones(2), 3))
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        ember.cat(ember.ones(2, 2))


def test_cat_composite_matches_kernel():
    from ember._ops import _shape
    a, b = arr((2, 3)), arr((2, 1))
    out = ember.empty(2, 4, dtype=ember.float64)
    _shape._cat._op.composite([mk(a), ember.ones(0), mk(b)], 1, out=out)
    same(out, np.concatenate([a, b], 1))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack(dim):
    a, b = arr((2, 3)), arr((2, 3))
    same(ember.stack([mk(a), mk(b).t().t()], dim), np.stack([a, b], dim))
    same(ember.stack([mk(a), mk(b, ember.int64)], dim), np.stack([a, b], dim), ember.float64)


def test_stack_errors_and_scalars():
    same(ember.stack([mk(np.float64(1.0)), mk(np.float64(2.0))]), np.array([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 "
                                           r"and \[2, 4\] at entry 1"):
        ember.stack([ember.ones(2, 3), ember.ones(2, 4)])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        ember.stack([])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.stack([ember.ones(2, 3)], 3)
    out = ember.empty(2, 2, 3, dtype=ember.float64)
    a = arr((2, 3))
    assert ember.stack([mk(a), mk(a)], out=out) is out
    same(out, np.stack([a, a]))


@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (2, 3)], [(), (3,)], [(2, 3, 2), (2, 3, 2)]])
def test_hstack_vstack_dstack_column_stack(shapes):
    arrs = [arr(s) for s in shapes]
    ts = [mk(a) for a in arrs]
    same(ember.hstack(ts), np.hstack(arrs))
    if all(len(s) == len(shapes[0]) for s in shapes):
        same(ember.vstack(ts), np.vstack(arrs))
        same(ember.row_stack(ts), np.vstack(arrs))
        same(ember.dstack(ts), np.dstack(arrs))
    if all(len(s) <= 2 for s in shapes) and len(set(shapes)) == 1:
        same(ember.column_stack(ts), np.column_stack(arrs))
    for fn in ("hstack", "vstack", "dstack", "column_stack"):
        with pytest.raises(RuntimeError, match=f"{fn} expects a non-empty TensorList"):
            getattr(ember, fn)([])


def test_column_stack_mixed():
    a, b = arr((3,)), arr((3, 2))
    same(ember.column_stack([mk(a), mk(b)]), np.column_stack([a, b]))


# ---------------------------------------------------------------- flip, roll, rot90
@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_dtypes(dtype):
    a = arr((2, 3, 4), dtype)
    same(ember.flip(mk(a, dtype), (0, 2)), np.flip(a, (0, 2)), dtype)
    same(mk(a, dtype).flip([-1]), np.flip(a, -1), dtype)


def test_flip_variants_and_errors():
    a = arr((3, 4))
    same(ember.flip(mk(a).t(), (0,)), np.flip(a.T, 0))
    same(ember.fliplr(mk(a)), np.fliplr(a))
    same(ember.flipud(mk(a)), np.flipud(a))
    same(ember.flip(mk(np.float64(2.0)), (0,)), np.float64(2.0))
    same(ember.flip(mk(a), ()), a)
    same(ember.flip(ember.ones(0, 3), (0,)), np.ones((0, 3)))
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        ember.flip(mk(a), (0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.flip(mk(a), (2,))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        ember.flip(mk(a), 0)
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        ember.fliplr(ember.ones(3))
    with pytest.raises(RuntimeError, match="Input must be >= 1-d."):
        ember.flipud(ember.ones(()))


@pytest.mark.parametrize("shifts,dims", [(1, None), (-7, None), (1, 0), ((1, 2), (0, 1)), ((5, -1), (1, 0)),
                                         (3, -1), ((1, 1), (1, 1))])
def test_roll(shifts, dims):
    a = np.arange(24).reshape(2, 3, 4)
    same(ember.roll(mk(a, ember.int64), shifts, dims), np.roll(a, shifts, dims))
    same(mk(a, ember.int64).transpose(0, 2).roll(shifts, dims), np.roll(a.transpose(2, 1, 0), shifts, dims))


def test_roll_edge_cases_and_errors():
    same(ember.roll(mk(np.float64(3.0)), 1), np.float64(3.0))
    same(ember.roll(ember.ones(0, 3), 1, 0), np.ones((0, 3)))
    same(ember.roll(mk(np.arange(5.0)), 2), np.roll(np.arange(5.0), 2))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:1"):
        ember.roll(ember.ones(2, 3), (1, 2), 0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:0"):
        ember.roll(ember.ones(2, 3), (1, 2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.roll(ember.ones(2, 3), 1, 2)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ember.roll(ember.ones(()), 1, 0)


@pytest.mark.parametrize("k", [0, 1, 2, 3, -1, 5])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (0, 2), (-1, -2)])
def test_rot90(k, dims):
    a = np.arange(24).reshape(2, 3, 4)
    same(ember.rot90(mk(a, ember.int64), k, dims), np.rot90(a, k, dims))


def test_rot90_errors():
    with pytest.raises(RuntimeError, match="expected total dims >= 2, but got total dims = 1"):
        ember.rot90(ember.ones(3))
    with pytest.raises(RuntimeError, match="expected total rotation dims == 2, but got dims = 1"):
        ember.rot90(ember.ones(3, 3), 1, (0,))
    with pytest.raises(RuntimeError, match="expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"):
        ember.rot90(ember.ones(3, 3), 1, (0, 0))


# ---------------------------------------------------------------- repeat, tile, repeat_interleave
@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool, ember.bfloat16])
@pytest.mark.parametrize("reps", [(2, 2), (1, 3), (2, 1, 2), (2, 0, 2), (1, 1)])
def test_repeat(dtype, reps):
    a = arr((2, 3), dtype)
    same(mk(a, dtype).repeat(*reps), np.tile(a, reps), dtype)
    same(mk(a, dtype).repeat(reps), np.tile(a, reps), dtype)
    same(mk(a, dtype).t().repeat(*reps), np.tile(a.T, reps), dtype)


def test_repeat_errors_and_scalars():
    same(ember.ones(()).repeat(()), np.float32(1.0))
    same(mk(np.float64(2.0)).repeat(3), np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller than number of "
                                           "dimensions of tensor"):
        ember.ones(2, 3).repeat(2)
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -2: \[-2, 6\]"):
        ember.ones(2, 3).repeat(-1, 2)
    with pytest.raises(TypeError, match="missing 1 required positional arguments"):
        ember.ones(()).repeat()


@pytest.mark.parametrize("reps", [(2,), (2, 1, 3), (), (1, 2, 1, 1)])
def test_tile(reps):
    a = arr((2, 3))
    same(ember.tile(mk(a), reps), np.tile(a, reps))
    same(mk(a).tile(reps), np.tile(a, reps))


@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("reps", [0, 1, 3])
def test_repeat_interleave_int(dim, reps):
    a = arr((2, 3))
    same(ember.repeat_interleave(mk(a), reps, dim), np.repeat(a, reps, dim))
    same(mk(a).t().repeat_interleave(reps, dim), np.repeat(a.T, reps, dim))


def test_repeat_interleave_tensor_and_errors():
    a = arr((2, 3))
    r = mk([1, 2], ember.int64)
    same(ember.repeat_interleave(mk(a), r, dim=0), np.repeat(a, [1, 2], 0))
    same(ember.repeat_interleave(mk(a), mk([0, 2, 1], ember.int32), dim=1), np.repeat(a, [0, 2, 1], 1))
    same(ember.repeat_interleave(mk(a), mk(np.int64(2), ember.int64), dim=0), np.repeat(a, 2, 0))
    same(ember.repeat_interleave(mk(a), mk([2], ember.int64), dim=0), np.repeat(a, 2, 0))
    same(ember.repeat_interleave(mk([1, 2], ember.int64)), np.array([0, 1, 1]), ember.int64)
    same(ember.repeat_interleave(mk([1, 2], ember.int32)), np.array([0, 1, 1]), ember.int32)
    same(ember.repeat_interleave(mk(np.float64(2.0)), 3), np.full(3, 2.0))
    same(ember.repeat_interleave(mk(a), r, dim=0, output_size=3), np.repeat(a, [1, 2], 0))
    from ember._ops import _shape
    same(_shape._repeat_interleave_tensor._op.composite(mk(a), mk([0, 2, 1], ember.int64), 1),
         np.repeat(a, [0, 2, 1], 1))
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        ember.repeat_interleave(mk(a), -1)
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along dim, but got "
                                           r"repeats.size\(0\) = 2 and input.size\(1\) = 3"):
        ember.repeat_interleave(mk(a), r, dim=1)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        ember.repeat_interleave(mk(a), mk([1, -2], ember.int64), dim=0)
    with pytest.raises(RuntimeError, match="repeats must be 0-dim or 1-dim tensor"):
        ember.repeat_interleave(mk(a), mk([[1, 2]], ember.int64), dim=0)
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        ember.repeat_interleave(mk(a), mk([1.0, 2.0], ember.float32), dim=0)
    with pytest.raises(RuntimeError, match="allocated size does not match required size"):
        ember.repeat_interleave(mk(a), r, dim=0, output_size=4)
    with pytest.raises(RuntimeError, match="Invalid output_size, expected 4 but got 5"):
        ember.repeat_interleave(mk(a), 2, dim=0, output_size=5)


# ---------------------------------------------------------------- tril, triu
@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool, ember.float16, ember.complex64])
@pytest.mark.parametrize("diagonal", [0, 1, -1, 5, -5])
def test_tril_triu(dtype, diagonal):
    a = arr((2, 3, 4), dtype)
    same(ember.tril(mk(a, dtype), diagonal), np.tril(a, diagonal), dtype)
    same(ember.triu(mk(a, dtype), diagonal), np.triu(a, diagonal), dtype)
    same(mk(a, dtype).transpose(1, 2).tril(diagonal), np.tril(a.transpose(0, 2, 1), diagonal), dtype)


def test_tril_triu_inplace_out_composite_and_errors():
    a = arr((3, 4))
    x = mk(a)
    assert x.tril_(1) is x
    same(x, np.tril(a, 1))
    y = mk(a)
    y.triu_(-1)
    same(y, np.triu(a, -1))
    out = ember.empty(3, 4, dtype=ember.float64)
    assert ember.triu(mk(a), out=out) is out
    same(out, np.triu(a))
    comp = ember.tril._op.composite
    out2 = ember.empty(2, 3, 4, dtype=ember.float64)
    b = arr((2, 3, 4))
    comp(mk(b), -1, out=out2)
    same(out2, np.tril(b, -1))
    ember.triu._op.composite(mk(b), 2, out=out2)
    same(out2, np.triu(b, 2))
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        ember.tril(ember.ones(3))
    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2 dimensions"):
        ember.ones(3).triu_()


# ---------------------------------------------------------------- diff
@pytest.mark.parametrize("n", [0, 1, 2, 5])
@pytest.mark.parametrize("dim", [0, -1])
def test_diff(n, dim):
    a = arr((4, 5))
    same(ember.diff(mk(a), n, dim), np.diff(a, n, dim))
    same(ember.diff(mk(a).t(), n, dim), np.diff(a.T, n, dim))
    pre, app = arr((1, 5) if dim == 0 else (4, 1)), arr((2, 5) if dim == 0 else (4, 2))
    same(ember.diff(mk(a), n, dim, prepend=mk(pre), append=mk(app)), np.diff(a, n, dim, prepend=pre, append=app))


def test_diff_dtypes_and_errors():
    b = np.array([True, False, False, True])
    same(ember.diff(mk(b, ember.bool)), np.diff(b), ember.bool)
    u = np.array([1, 2, 5], np.uint8)
    same(ember.diff(mk(u, ember.uint8)), np.diff(u), ember.uint8)
    same(ember.diff(mk([1, 2, 5], ember.int64), prepend=mk([1.5], ember.float32)), np.array([-0.5, 1.0, 3.0]),
         ember.float32)
    with pytest.raises(RuntimeError, match="diff expects input to be at least one-dimensional"):
        ember.diff(ember.ones(()))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        ember.diff(ember.ones(3), n=-1)
    with pytest.raises(RuntimeError, match="diff expects prepend or append to be the same dimension as input"):
        ember.diff(ember.ones(1, 3), prepend=ember.ones(1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.diff(ember.ones(3), dim=1)


# ---------------------------------------------------------------- meshgrid, broadcasting, atleast
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    xs = [np.arange(2.0), np.arange(3.0), np.arange(4.0)]
    for k in (1, 2, 3):
        got = ember.meshgrid(*[mk(x) for x in xs[:k]], indexing=indexing)
        exp = np.meshgrid(*xs[:k], indexing=indexing)
        assert len(got) == k
        for g, e in zip(got, exp):
            same(g, e)
    got = ember.meshgrid([mk(xs[0]), mk(np.float64(5.0))], indexing=indexing)
    assert all(g.shape == ((2, 1) if indexing == "ij" else (1, 2)) for g in got)


def test_meshgrid_default_is_ij_without_warning_and_errors(recwarn):
    g = ember.meshgrid(ember.arange(2), ember.arange(3))
    assert g[0].shape == (2, 3) and g[0].stride() == (1, 0)
    assert not [w for w in recwarn.list if "meshgrid" in str(w.message)]
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij", but received: foo'):
        ember.meshgrid(ember.ones(2), indexing="foo")
    with pytest.raises(RuntimeError, match="meshgrid expects all tensors to have the same dtype"):
        ember.meshgrid(ember.ones(2), ember.ones(3, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor in the tensor list"):
        ember.meshgrid(ember.ones(2), ember.ones(3, 2))
    with pytest.raises(RuntimeError, match="meshgrid expects a non-empty TensorList"):
        ember.meshgrid()


def test_broadcast_helpers():
    assert ember.broadcast_shapes((2, 3), (3, 1, 3), 3) == (3, 2, 3)
    assert isinstance(ember.broadcast_shapes((2, 1)), ember.Size)
    assert ember.broadcast_shapes() == ()
    with pytest.raises(RuntimeError, match=r"Attempting to broadcast a dimension of length 4 at -1! Mismatching "
                                           r"argument at index 1 had \(4,\); but expected shape should be "
                                           r"broadcastable to \[2, 3\]"):
        ember.broadcast_shapes((2, 3), (4,))
    a = arr((3, 1))
    b = ember.broadcast_to(mk(a), (2, 3, 4))
    assert b.stride() == (0, 1, 0)
    same(b, np.broadcast_to(a, (2, 3, 4)))
    same(mk(a).broadcast_to((3, 5)), np.broadcast_to(a, (3, 5)))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match the existing size "
                                           r"\(2\) at non-singleton dimension 0"):
        ember.broadcast_to(ember.ones(2, 3), (3, 3))
    x, y = ember.broadcast_tensors(mk(arr((2, 3))), mk(arr((3, 1, 3))))
    assert x.shape == y.shape == (3, 2, 3)
    assert len(ember.broadcast_tensors([ember.ones(2), ember.ones(1)])) == 2
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\)"):
        ember.broadcast_tensors(ember.ones(2, 3), ember.ones(3, 2, 1, 2))


def test_atleast():
    s = mk(np.float64(1.0))
    assert ember.atleast_1d(s).shape == (1,)
    assert ember.atleast_2d(s).shape == (1, 1)
    assert ember.atleast_3d(s).shape == (1, 1, 1)
    v, m = ember.ones(3), ember.ones(3, 4)
    assert ember.atleast_2d(v).shape == (1, 3) and ember.atleast_2d(v).stride() == (3, 1)
    assert ember.atleast_3d(v).shape == (1, 3, 1)
    assert ember.atleast_3d(m).shape == (3, 4, 1)
    assert ember.atleast_1d(m) is m
    r = ember.atleast_1d(s, v)
    assert isinstance(r, tuple) and [t.shape for t in r] == [(1,), (3,)]
    r = ember.atleast_2d([s, v])
    assert [t.shape for t in r] == [(1, 1), (1, 3)]


# ---------------------------------------------------------------- module-level view functions
def test_view_functions_delegate_to_tensor_views():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = mk(a)
    same(ember.transpose(t, 0, 2), a.transpose(2, 1, 0))
    same(ember.swapaxes(t, 0, 1), np.swapaxes(a, 0, 1))
    same(ember.swapdims(t, 0, 1), np.swapaxes(a, 0, 1))
    same(ember.permute(t, (2, 0, 1)), a.transpose(2, 0, 1))
    same(ember.reshape(t, (4, -1)), a.reshape(4, -1))
    same(ember.squeeze(ember.unsqueeze(t, 1), 1), a)
    same(ember.squeeze(mk(a.reshape(1, 2, 1, 12))), a.reshape(2, 12))
    same(ember.flatten(t, 1), a.reshape(2, 12))
    same(ember.unflatten(t, 2, (2, 2)), a.reshape(2, 3, 2, 2))
    same(ember.movedim(t, 0, -1), np.moveaxis(a, 0, -1))
    same(ember.moveaxis(t, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)))
    same(ember.narrow(t, 2, 1, 2), a[:, :, 1:3])
    same(ember.select(t, 1, -1), a[:, -1])
    assert [x.shape for x in ember.split(t, 2, 2)] == [(2, 3, 2), (2, 3, 2)]
    assert [x.shape for x in ember.split(t, [1, 3], 2)] == [(2, 3, 1), (2, 3, 3)]
    assert [x.shape for x in ember.chunk(t, 2, 1)] == [(2, 2, 4), (2, 1, 4)]
    same(ember.unbind(t, 1)[2], a[:, 2])
    same(ember.t(mk(a[0])), a[0].T)
    same(ember.adjoint(t), a.transpose(0, 2, 1))
    same(ember.diagonal(t, 1, 1, 2), np.diagonal(a, 1, 1, 2))
    same(ember.as_strided(t, (2, 2), (1, 4)), np.lib.stride_tricks.as_strided(a, (2, 2), (8, 32)))
    assert [x.shape for x in ember.tensor_split(t, 3, 2)] == [(2, 3, 2), (2, 3, 1), (2, 3, 1)]
    assert [x.shape for x in ember.tensor_split(t, [1, 2], 1)] == [(2, 1, 4), (2, 1, 4), (2, 1, 4)]
    same(ember.ravel(t.transpose(0, 2)), a.transpose(2, 1, 0).ravel())
    assert [x.shape for x in ember.hsplit(t, 3)] == [(2, 1, 4)] * 3
    assert [x.shape for x in ember.vsplit(t, [1])] == [(1, 3, 4), (1, 3, 4)]
    assert [x.shape for x in ember.dsplit(t, 2)] == [(2, 3, 2)] * 2
    with pytest.raises(RuntimeError, match="not divisible by the split_size 3"):
        ember.hsplit(ember.ones(4), 3)
    with pytest.raises(RuntimeError, match="dsplit requires a tensor with at least 3 dimension, but got a tensor "
                                           "with 2 dimensions"):
        ember.dsplit(ember.ones(4, 4), 2)
    v = ember.transpose(t, 0, 1)
    assert v.untyped_storage() is t.untyped_storage()


def test_cat_runs_ember_cpus_own_kernel():
    # (speed is the benchmarks' business; here: cat on cpu is a native kernel, never a fallback)
    from ember import _dispatch, profiler
    a = ember.ones(64, 64)
    with profiler.record_fallbacks() as rec:
        out = ember.cat([a, a], 1)
    assert out.shape == (64, 128) and rec.total == 0
    assert _dispatch.lookup("cat").source(("cpu", "strided", ember.float32)) == "native"

"""Property tests (hypothesis): random COO tensors (duplicates, any order, hybrid) against numpy."""
from __future__ import annotations

import ember
import numpy as np
from _sparse_helpers import dense_of, to_np
from hypothesis import given, settings
from hypothesis import strategies as st


@st.composite
def coo(draw):
    k = draw(st.integers(1, 3))
    sizes = tuple(draw(st.lists(st.integers(1, 5), min_size=k, max_size=k)))
    dense = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=1)))
    nnz = draw(st.integers(0, 12))
    rows = [draw(st.lists(st.integers(0, s - 1), min_size=nnz, max_size=nnz)) for s in sizes]
    idx = np.array(rows, dtype=np.int64).reshape(k, nnz)
    vals = np.array(draw(st.lists(st.integers(-4, 4), min_size=nnz * int(np.prod(dense)),
                                  max_size=nnz * int(np.prod(dense)))), dtype=np.float64).reshape((nnz,) + dense)
    return idx, vals, sizes + dense


def _sparse(idx, vals, shape):
    return ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals, dtype=ember.float64), shape)


@settings(max_examples=60, deadline=None)
@given(coo())
def test_coalesce_to_dense_sum_match_numpy(data):
    idx, vals, shape = data
    s = _sparse(idx, vals, shape)
    ref = dense_of(idx, vals, shape)
    np.testing.assert_allclose(to_np(s), ref)
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() <= max(idx.shape[1], 0)
    np.testing.assert_allclose(to_np(c), ref)
    if c._nnz() > 1:
        k = c.sparse_dim()
        lin = np.ravel_multi_index(tuple(c.indices().numpy()), shape[:k])
        assert np.all(np.diff(lin) > 0)
    np.testing.assert_allclose(float(s.sum()), ref.sum())
    np.testing.assert_allclose(to_np(ember.sparse.sum(s, 0)), ref.sum(0))
    np.testing.assert_allclose(to_np(s * 2 + s), 3 * ref)
    np.testing.assert_allclose(to_np(s * s), ref * ref)
    np.testing.assert_allclose(to_np(ember.tensor(ref) - s), np.zeros(shape), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(coo(), st.integers(1, 4))
def test_mm_matches_numpy(data, m):
    idx, vals, shape = data
    if len(shape) != 2 or idx.shape[0] != 2:
        return
    s = _sparse(idx, vals, shape)
    d = np.arange(shape[1] * m, dtype=np.float64).reshape(shape[1], m) - 3
    np.testing.assert_allclose(ember.sparse.mm(s, ember.tensor(d)).numpy(), dense_of(idx, vals, shape) @ d)

"""ember.nn.utils.rnn (pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
unpack_sequence, unpad_sequence, PackedSequence) and packed input to RNN / LSTM / GRU, against torch:
values, batch sizes, permutations, float64 gradients through packing and through the layers, and
PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import rnn as R

torch = pytest.importorskip("torch")
TR = torch.nn.utils.rnn

rng = np.random.default_rng(0)


def _np(t):
    return t.detach().numpy()


def _eq_packed(pe, pt):
    np.testing.assert_allclose(_np(pe.data), _np(pt.data), rtol=1e-12)
    np.testing.assert_array_equal(pe.batch_sizes.numpy(), pt.batch_sizes.numpy())
    assert pe.batch_sizes.dtype == ember.int64
    for a, b in ((pe.sorted_indices, pt.sorted_indices), (pe.unsorted_indices, pt.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(batch_first, padding_side):
    seqs = [rng.standard_normal((n, 3)) for n in (2, 5, 1)]
    e = R.pad_sequence([ember.tensor(s) for s in seqs], batch_first, -1.5, padding_side)
    t = TR.pad_sequence([torch.tensor(s) for s in seqs], batch_first, -1.5, padding_side)
    np.testing.assert_array_equal(_np(e), t.numpy())
    np.testing.assert_array_equal(_np(R.pad_sequence(ember.tensor(np.stack([seqs[0]] * 2)))),
                                  TR.pad_sequence(torch.tensor(np.stack([seqs[0]] * 2))).numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce", [([5, 3, 3, 1], True), ([2, 5, 1, 4], False), ([4, 4, 4, 4], True)])
def test_pack_pad_roundtrip_and_gradients(batch_first, lengths, enforce):
    shape = (4, 5, 3) if batch_first else (5, 4, 3)
    x = rng.standard_normal(shape)
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    pe = R.pack_padded_sequence(xe, lengths, batch_first, enforce)
    pt = TR.pack_padded_sequence(xt, lengths, batch_first, enforce)
    assert isinstance(pe, R.PackedSequence) and isinstance(pe, tuple) and len(pe) == 4
    _eq_packed(pe, pt)
    ye, le = R.pad_packed_sequence(pe, batch_first, padding_value=9.0, total_length=6)
    yt, lt = TR.pad_packed_sequence(pt, batch_first, padding_value=9.0, total_length=6)
    np.testing.assert_array_equal(_np(ye), yt.detach().numpy())
    np.testing.assert_array_equal(le.numpy(), lt.numpy())
    assert le.dtype == ember.int64
    w = rng.standard_normal(tuple(yt.shape))
    (ye * ember.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(xe.grad), xt.grad.numpy(), rtol=1e-12)
    # lengths may also be an int64 tensor
    _eq_packed(R.pack_padded_sequence(ember.tensor(x), ember.tensor(lengths), batch_first, enforce),
               TR.pack_padded_sequence(torch.tensor(x), torch.tensor(lengths), batch_first, enforce))


def test_pack_sequence_unpack_unpad():
    seqs = [rng.standard_normal((n, 2)) for n in (3, 1, 4)]
    pe = R.pack_sequence([ember.tensor(s) for s in seqs], enforce_sorted=False)
    pt = TR.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    _eq_packed(pe, pt)
    for a, s in zip(R.unpack_sequence(pe), seqs):
        np.testing.assert_array_equal(_np(a), s)
    padded = R.pad_sequence([ember.tensor(s) for s in seqs], batch_first=True)
    for a, s in zip(R.unpad_sequence(padded, ember.tensor([3, 1, 4]), batch_first=True), seqs):
        np.testing.assert_array_equal(_np(a), s)
    assert pe.double() is pe and pe.float().data.dtype == ember.float32
    perm = ember.tensor([2, 0, 3, 1])
    np.testing.assert_array_equal(R.invert_permutation(perm).numpy(),
                                  TR.invert_permutation(torch.tensor([2, 0, 3, 1])).numpy())
    assert R.invert_permutation(None) is None


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 4), [2, 3]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 4), [2, 0]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 4), [3, 2, 1]),
    lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 4), [3, 2]), total_length=2),
    lambda lib: lib.nn.utils.rnn.pad_sequence([lib.zeros(2, 3), lib.zeros(2, 4)]),
    lambda lib: lib.nn.utils.rnn.pad_sequence([]),
    lambda lib: lib.nn.utils.rnn.pad_sequence([lib.zeros(2)], padding_side="mid"),
])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as et:
        call(torch)
    with pytest.raises(type(et.value)) as ee:
        call(ember)
    assert str(ee.value) == str(et.value)


# ----------------------------------------------------------------------------- packed input to the layers
def _pair(cls, **kw):
    em, tm = getattr(nn, cls)(**kw).double(), getattr(torch.nn, cls)(**kw).double()
    tm.load_state_dict({k: torch.tensor(_np(v)) for k, v in em.state_dict().items()})
    return em, tm


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional,num_layers", [(False, 1), (True, 2)])
@pytest.mark.parametrize("enforce", [True, False])
@pytest.mark.parametrize("with_hx", [False, True])
def test_packed_input_matches_torch(cls, bidirectional, num_layers, enforce, with_hx):
    kw = dict(input_size=3, hidden_size=4, num_layers=num_layers, bidirectional=bidirectional, batch_first=True)
    if cls == "LSTM" and num_layers == 2:
        kw["proj_size"] = 2
    em, tm = _pair(cls, **kw)
    assert em.flatten_parameters() is None
    lengths = [5, 4, 2] if enforce else [2, 5, 3]
    x = rng.standard_normal((3, 5, 3))
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    pe = R.pack_padded_sequence(xe, lengths, batch_first=True, enforce_sorted=enforce)
    pt = TR.pack_padded_sequence(xt, lengths, batch_first=True, enforce_sorted=enforce)
    d = (2 if bidirectional else 1) * num_layers
    hargs_e, hargs_t = (), ()
    if with_hx:
        h = rng.standard_normal((d, 3, kw.get("proj_size", 4)))
        if cls == "LSTM":
            c = rng.standard_normal((d, 3, 4))
            hargs_e, hargs_t = ((ember.tensor(h), ember.tensor(c)),), ((torch.tensor(h), torch.tensor(c)),)
        else:
            hargs_e, hargs_t = (ember.tensor(h),), (torch.tensor(h),)
    oe, he = em(pe, *hargs_e)
    ot, ht = tm(pt, *hargs_t)
    assert isinstance(oe, R.PackedSequence)
    _eq_packed(oe, ot)
    he = he if cls == "LSTM" else (he,)
    ht = ht if cls == "LSTM" else (ht,)
    for a, b in zip(he, ht):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(ot.data.shape))
    loss_e = (oe.data * ember.tensor(w)).sum() + sum(a.sum() for a in he)
    loss_t = (ot.data * torch.tensor(w)).sum() + sum(b.sum() for b in ht)
    loss_e.backward()
    loss_t.backward()
    np.testing.assert_allclose(_np(xe.grad), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (n, pe_), (_, pt_) in zip(em.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(_np(pe_.grad), pt_.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=n)


def test_packed_input_size_error():
    for lib in (ember, torch):
        m = lib.nn.GRU(3, 4)
        p = lib.nn.utils.rnn.pack_sequence([lib.zeros(2, 5)])
        with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
            m(p)

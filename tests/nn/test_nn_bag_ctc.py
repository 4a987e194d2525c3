"""embedding_bag / EmbeddingBag, ctc_loss / CTCLoss and feature_alpha_dropout / FeatureAlphaDropout
compared with PyTorch side by side (values, shapes, float64 gradients, error classes)."""
import re

import numpy as np
import pytest

import ember
import ember.nn as enn
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(5)
W = RNG.standard_normal((10, 3))
INP = np.array([1, 2, 4, 5, 4, 3, 2, 9])
OFFS = np.array([0, 2, 2, 5])


def _close(t, e, tol=1e-10):
    assert tuple(t.shape) == tuple(e.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _bag(inp, offs=None, psw=None, **kw):
    tw, ew = torch.tensor(W, requires_grad=True), ember.tensor(W, requires_grad=True)
    tp = torch.tensor(psw, requires_grad=True) if psw is not None else None
    ep = ember.tensor(psw, requires_grad=True) if psw is not None else None
    t = TF.embedding_bag(torch.tensor(inp), tw, None if offs is None else torch.tensor(offs), per_sample_weights=tp,
                         **kw)
    e = EF.embedding_bag(ember.tensor(inp), ew, None if offs is None else ember.tensor(offs), per_sample_weights=ep,
                         **kw)
    _close(t, e)
    g = RNG.standard_normal(tuple(t.shape))
    (t * torch.tensor(g)).sum().backward()
    (e * ember.tensor(g)).sum().backward()
    _close(tw.grad, ew.grad)
    if psw is not None:
        _close(tp.grad, ep.grad)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("form", ["offsets", "2d", "padding_idx", "last_offset", "int32"])
def test_embedding_bag_matches_torch(mode, form):
    if form == "offsets":
        _bag(INP, OFFS, mode=mode)
    elif form == "2d":
        _bag(INP.reshape(2, 4), mode=mode)
    elif form == "padding_idx":
        _bag(INP, OFFS, mode=mode, padding_idx=4)
    elif form == "last_offset":
        _bag(INP, np.array([0, 2, 2, 5, 8]), mode=mode, include_last_offset=True)
    else:
        _bag(INP.astype(np.int32), OFFS.astype(np.int32), mode=mode)


def test_embedding_bag_per_sample_weights():
    _bag(INP, OFFS, psw=RNG.standard_normal(8), mode="sum")
    _bag(INP.reshape(4, 2), psw=RNG.standard_normal((4, 2)), mode="sum", padding_idx=2)


def test_embedding_bag_errors_match_torch():
    w = torch.randn(10, 3)
    cases = [(np.array([[1, 2]]), dict(offsets=np.array([0]))), (np.array([1, 2]), {}),
             (np.array([1, 2]), dict(offsets=np.array([0]), mode="foo")),
             (np.array([1, 2]), dict(offsets=np.array([0]), mode="mean", per_sample_weights=np.ones(2))),
             (np.array([1, 2]), dict(offsets=np.array([0]), mode="sum", per_sample_weights=np.ones(3))),
             (np.zeros((1, 1, 1), dtype=np.int64), {}), (np.array([1, 2]), dict(offsets=np.array([1]))),
             (np.array([1, 20]), dict(offsets=np.array([0]))), (np.array([1.0, 2.0]), dict(offsets=np.array([0]))),
             (np.array([1, 2]), dict(offsets=np.array([[0]])))]
    for inp, kw in cases:
        tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        ek = {k: ember.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        with pytest.raises(Exception) as te:
            TF.embedding_bag(torch.tensor(inp), w, **tk)
        with pytest.raises(type(te.value), match=re.escape(str(te.value)[:25])):
            EF.embedding_bag(ember.tensor(inp), ember.tensor(w.numpy()), **ek)


def test_embedding_bag_module_matches_torch():
    tm = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=2).double()
    em = enn.EmbeddingBag(10, 3, mode="max", padding_idx=2, dtype=ember.float64)
    assert repr(tm) == repr(em)
    assert not em.weight[2].abs().sum().item()
    with ember.no_grad():
        em.weight.copy_(ember.tensor(tm.weight.detach().numpy()))
    _close(tm(torch.tensor(INP), torch.tensor(OFFS)), em(ember.tensor(INP), ember.tensor(OFFS)))
    pre = enn.EmbeddingBag.from_pretrained(ember.tensor(W), mode="sum")
    assert not pre.weight.requires_grad and pre.mode == "sum"
    _close(torch.nn.EmbeddingBag.from_pretrained(torch.tensor(W), mode="sum")(torch.tensor(INP.reshape(2, 4))),
           pre(ember.tensor(INP.reshape(2, 4))))


TG = np.array([[1, 2, 2], [3, 1, 0], [4, 0, 0]])
LOGITS = RNG.standard_normal((6, 3, 5))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("lengths", [([3, 2, 1], [6, 5, 4]), ([3, 2, 0], [6, 6, 6]), ([3, 2, 1], [6, 1, 4])])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_matches_torch(reduction, lengths, zero_infinity):
    tl, il = lengths
    tx, ex = torch.tensor(LOGITS, requires_grad=True), ember.tensor(LOGITS, requires_grad=True)
    t = TF.ctc_loss(tx.log_softmax(2), torch.tensor(TG), il, tl, reduction=reduction, zero_infinity=zero_infinity)
    e = EF.ctc_loss(ex.log_softmax(2), ember.tensor(TG), il, tl, reduction=reduction, zero_infinity=zero_infinity)
    assert tuple(t.shape) == tuple(e.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10)
    if zero_infinity or il[1] > 1:
        # through log_softmax (PyTorch's kernel gradient assumes it, see F.ctc_loss)
        t.sum().backward()
        e.sum().backward()
        _close(tx.grad, ex.grad)


def test_ctc_loss_concatenated_targets_tensor_lengths_unbatched_float32():
    lp = torch.tensor(LOGITS).log_softmax(2)
    flat = np.array([1, 2, 2, 3, 1, 4])
    t = TF.ctc_loss(lp, torch.tensor(flat), torch.tensor([6, 5, 4]), torch.tensor([3, 2, 1]), blank=0)
    e = EF.ctc_loss(ember.tensor(lp.numpy()), ember.tensor(flat), ember.tensor([6, 5, 4]), ember.tensor([3, 2, 1]))
    np.testing.assert_allclose(e.item(), t.item(), rtol=1e-12)
    t1 = TF.ctc_loss(lp[:, 0].float(), torch.tensor([1, 2]), torch.tensor(6), torch.tensor(2), blank=3,
                     reduction="none")
    e1 = EF.ctc_loss(ember.tensor(lp[:, 0].float().numpy()), ember.tensor([1, 2]), ember.tensor(6), ember.tensor(2),
                     blank=3, reduction="none")
    assert tuple(t1.shape) == tuple(e1.shape) and e1.dtype == ember.float32
    np.testing.assert_allclose(e1.item(), t1.item(), rtol=1e-5)
    tm, em = torch.nn.CTCLoss(blank=4, reduction="sum"), enn.CTCLoss(blank=4, reduction="sum")
    assert repr(tm) == repr(em)
    np.testing.assert_allclose(em(ember.tensor(lp.numpy()), ember.tensor(TG[:, :2]), [6, 6, 6], [2, 2, 1]).item(),
                               tm(lp, torch.tensor(TG[:, :2]), [6, 6, 6], [2, 2, 1]).item(), rtol=1e-12)


def test_ctc_loss_errors_match_torch():
    lp = torch.tensor(LOGITS[:, :2]).log_softmax(2)
    tg = np.array([[1, 2], [1, 1]])
    for args, kw in [(([5, 6], [2, 2]), dict(blank=5)), (([5, 7], [2, 2]), {}), (([5, 5], [2, 3]), {}),
                     (([5], [2, 2]), {}), (([5, 5], [2, 2]), dict(reduction="foo")), ((5, 2), {})]:
        with pytest.raises(Exception) as te:
            TF.ctc_loss(lp, torch.tensor(tg), *args, **kw)
        with pytest.raises(type(te.value), match=re.escape(str(te.value)[:25])):
            EF.ctc_loss(ember.tensor(lp.numpy()), ember.tensor(tg), *args, **kw)


def test_feature_alpha_dropout_structure_and_errors():
    x = ember.randn(4, 6, 3, 2, dtype=ember.float64)
    p = 0.3
    alpha = 1.7580993408473766
    a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    ember.manual_seed(0)
    y = EF.feature_alpha_dropout(x, p, training=True)
    kept = (y - (x * a + alpha * a * p)).abs().amax((2, 3)) < 1e-12
    dropped = (y - a * alpha * (p - 1)).abs().amax((2, 3)) < 1e-12
    assert bool((kept ^ dropped).all()) and 0 < int(dropped.sum()) < 24       # whole channels, either way
    assert EF.feature_alpha_dropout(x, p, training=False) is x
    assert not EF.feature_alpha_dropout(x, 1.0, training=True).abs().sum().item()
    for args in [(ember.randn(3), 0.5, True), (ember.randn(3, 3), 1.5, True)]:
        with pytest.raises(Exception) as te:
            TF.feature_alpha_dropout(torch.tensor(args[0].numpy()), *args[1:])
        with pytest.raises(type(te.value), match=re.escape(str(te.value)[:20])):
            EF.feature_alpha_dropout(*args)
    m, tm = enn.FeatureAlphaDropout(0.2), torch.nn.FeatureAlphaDropout(0.2)
    assert repr(m) == repr(tm)
    m.eval()
    assert m(x) is x


def test_bag_and_ctc_run_on_vdev():
    pytest.importorskip("ember_vdev")
    w = ember.tensor(W, requires_grad=True)
    wv = w.detach().to("vdev").requires_grad_()
    for mode in ("sum", "mean", "max"):
        a = EF.embedding_bag(ember.tensor(INP), w, ember.tensor(OFFS), mode=mode)
        b = EF.embedding_bag(ember.tensor(INP).to("vdev"), wv, ember.tensor(OFFS).to("vdev"), mode=mode)
        assert b.device.type == "vdev"
        np.testing.assert_allclose(b.cpu().detach().numpy(), a.detach().numpy(), atol=1e-12)
    x = ember.tensor(LOGITS, requires_grad=True)
    xv = x.detach().to("vdev").requires_grad_()
    la = EF.ctc_loss(x.log_softmax(2), ember.tensor(TG), [6, 5, 4], [3, 2, 1])
    lb = EF.ctc_loss(xv.log_softmax(2), ember.tensor(TG).to("vdev"), [6, 5, 4], [3, 2, 1])
    la.backward()
    lb.backward()
    np.testing.assert_allclose(lb.cpu().item(), la.item(), rtol=1e-12)
    np.testing.assert_allclose(xv.grad.cpu().numpy(), x.grad.numpy(), atol=1e-12)


def test_gumbel_softmax_properties():
    logits = ember.tensor(RNG.standard_normal((4, 6)), requires_grad=True)
    ember.manual_seed(1)
    y = EF.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(y.sum(-1).detach().numpy(), np.ones(4), rtol=1e-12)
    assert bool((y > 0).all())
    h = EF.gumbel_softmax(logits, hard=True, dim=0)
    assert sorted(set(h.detach().numpy().ravel().tolist())) == [0.0, 1.0]
    np.testing.assert_allclose(h.sum(0).detach().numpy(), np.ones(6))
    (h * ember.arange(24.0, dtype=ember.float64).reshape(4, 6)).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum().item() > 0      # straight-through gradient
    # the frequencies of the argmax follow softmax(logits)
    ember.manual_seed(2)
    lg = ember.tensor([[0.0, 1.0, 2.0]], dtype=ember.float64).expand(20000, 3)
    freq = EF.gumbel_softmax(lg, hard=True).mean(0).numpy()
    np.testing.assert_allclose(freq, torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0).numpy(), atol=0.02)
    with pytest.warns(UserWarning, match="deprecated"):
        EF.gumbel_softmax(logits, eps=1e-3)


@pytest.mark.parametrize("nd,xs,k,kw", [(2, (2, 3, 9, 11), 2, dict(output_size=(4, 5))),
                                        (2, (3, 10, 10), 3, dict(output_ratio=(0.5, 0.5))),
                                        (3, (2, 2, 7, 8, 9), 2, dict(output_size=(3, 4, 5))),
                                        (2, (2, 3, 9, 11), (2, 3), dict(output_size=(8, 9)))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fractional_max_pool_matches_torch(nd, xs, k, kw, dtype):
    x = RNG.standard_normal(xs).astype(dtype)
    n = xs[0] if len(xs) == nd + 2 else 1
    s = RNG.random((n, xs[-nd - 1], nd)).astype(dtype)
    f = f"fractional_max_pool{nd}d"
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    t, ti = getattr(TF, f)(tx, k, return_indices=True, _random_samples=torch.tensor(s), **kw)
    e, ei = getattr(EF, f)(ex, k, return_indices=True, _random_samples=ember.tensor(s), **kw)
    _close(t, e)
    assert (ti.numpy() == ei.numpy()).all() and ei.dtype == ember.int64
    t.sum().backward()
    e.sum().backward()
    _close(tx.grad, ex.grad)
    tm = getattr(torch.nn, f"FractionalMaxPool{nd}d")(k, _random_samples=torch.tensor(s), **kw)
    em = getattr(enn, f"FractionalMaxPool{nd}d")(k, _random_samples=ember.tensor(s), **kw)
    assert repr(tm) == repr(em)
    _close(tm(torch.tensor(x)), em(ember.tensor(x)))


def test_fractional_max_pool_errors_match_torch():
    x = np.zeros((1, 1, 5, 5))
    for kw in [dict(), dict(output_size=5)]:
        with pytest.raises(Exception) as te:
            TF.fractional_max_pool2d(torch.tensor(x), 2, **kw)
        with pytest.raises(type(te.value), match=re.escape(str(te.value)[:30])):
            EF.fractional_max_pool2d(ember.tensor(x), 2, **kw)
    for kw in [dict(), dict(output_size=2, output_ratio=0.5), dict(output_ratio=1.5)]:
        with pytest.raises(ValueError):
            torch.nn.FractionalMaxPool2d(2, **kw)
        with pytest.raises(ValueError):
            enn.FractionalMaxPool2d(2, **kw)
    ember.manual_seed(0)
    y = EF.fractional_max_pool2d(ember.randn(2, 3, 9, 9), 2, output_size=4)      # random samples drawn by ember
    assert tuple(y.shape) == (2, 3, 4, 4)

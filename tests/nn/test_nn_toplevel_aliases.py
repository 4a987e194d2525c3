"""The neural-network functions PyTorch exposes at top level (torch.conv3d, torch.batch_norm, torch.dropout,
torch.kl_div with an int reduction, ...): the same program runs under torch and ember, same results."""
import inspect

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X3 = RNG.standard_normal((2, 4, 6))
X4 = RNG.standard_normal((2, 4, 5, 6))
X5 = RNG.standard_normal((2, 4, 3, 4, 5))
V = RNG.standard_normal((3, 5))
V2 = RNG.standard_normal((3, 5))

# name -> program(lib, t) where t turns a numpy array into lib's tensor
PROGRAMS = {
    "conv1d": lambda L, t: L.conv1d(t(X3), t(RNG_W((3, 4, 3))), None, 1, "same"),
    "conv3d": lambda L, t: L.conv3d(t(X5), t(RNG_W((4, 2, 2, 2, 2))), t(RNG_W((4,))), 1, 1, 1, 2),
    "conv_transpose1d": lambda L, t: L.conv_transpose1d(t(X3), t(RNG_W((4, 2, 3))), None, 2, 1, 1),
    "conv_transpose2d": lambda L, t: L.conv_transpose2d(t(X4), t(RNG_W((4, 2, 3, 3))), None, 2, 1, 1, 2),
    "conv_transpose3d": lambda L, t: L.conv_transpose3d(t(X5), t(RNG_W((4, 2, 2, 2, 2))), None, 2),
    "layer_norm": lambda L, t: L.layer_norm(t(X4), (5, 6), t(RNG_W((5, 6))), None, 1e-5),
    "native_layer_norm": lambda L, t: L.native_layer_norm(t(X4), (5, 6), t(RNG_W((5, 6))), t(RNG_W((5, 6))), 1e-5),
    "group_norm": lambda L, t: L.group_norm(t(X4), 2, t(RNG_W((4,))), t(RNG_W((4,)))),
    "rms_norm": lambda L, t: L.rms_norm(t(X4), (6,), t(RNG_W((6,)))),
    "batch_norm": lambda L, t: L.batch_norm(t(X4), t(RNG_W((4,))), None, t(np.zeros(4)), t(np.ones(4)), True, 0.1,
                                            1e-5, False),
    "instance_norm": lambda L, t: L.instance_norm(t(X4), None, None, None, None, True, 0.1, 1e-5, False),
    "dropout": lambda L, t: L.dropout(t(X4), 0.3, False),
    "alpha_dropout": lambda L, t: L.alpha_dropout(t(X4), 0.3, False),
    "feature_alpha_dropout": lambda L, t: L.feature_alpha_dropout(t(X4), 0.3, False),
    "feature_dropout": lambda L, t: L.feature_dropout(t(X4), 1.0, True),
    "pixel_shuffle": lambda L, t: L.pixel_shuffle(t(X4), 2),
    "pixel_unshuffle": lambda L, t: L.pixel_unshuffle(t(RNG_W((1, 2, 4, 6))), 2),
    "channel_shuffle": lambda L, t: L.channel_shuffle(t(X4), 2),
    "native_channel_shuffle": lambda L, t: L.native_channel_shuffle(t(X4), 2),
    "avg_pool1d": lambda L, t: L.avg_pool1d(t(X3), 2),
    "max_pool1d": lambda L, t: L.max_pool1d(t(X3), 3, 2, 1),
    "max_pool2d": lambda L, t: L.max_pool2d(t(X4), 2),
    "max_pool3d": lambda L, t: L.max_pool3d(t(X5), 2, 1),
    "max_pool1d_with_indices": lambda L, t: L.max_pool1d_with_indices(t(X3), 2),
    "adaptive_avg_pool1d": lambda L, t: L.adaptive_avg_pool1d(t(X3), 4),
    "adaptive_max_pool1d": lambda L, t: L.adaptive_max_pool1d(t(X3), 4),
    "bilinear": lambda L, t: L.bilinear(t(V), t(V2), t(RNG_W((2, 5, 5))), None),
    "cosine_similarity": lambda L, t: L.cosine_similarity(t(V), t(V2)),
    "pairwise_distance": lambda L, t: L.pairwise_distance(t(V), t(V2)),
    "pdist": lambda L, t: L.pdist(t(V)),
    "prelu": lambda L, t: L.prelu(t(X4), t(np.array([0.25]))),
    "rrelu": lambda L, t: L.rrelu(t(X4)),
    "selu": lambda L, t: L.selu(t(X4)),
    "celu": lambda L, t: L.celu(t(X4), 0.5),
    "threshold": lambda L, t: L.threshold(t(X4), 0.1, -1.0),
    "kl_div": lambda L, t: L.kl_div(t(V), t(np.abs(V2)), 2),
    "poisson_nll_loss": lambda L, t: L.poisson_nll_loss(t(V), t(np.abs(V2)), True, False, 1e-8, 0),
    "hinge_embedding_loss": lambda L, t: L.hinge_embedding_loss(t(V), t(np.sign(V2)), 0.5, 2),
    "margin_ranking_loss": lambda L, t: L.margin_ranking_loss(t(V[0]), t(V2[0]), t(np.sign(V[1])), 0.1),
    "cosine_embedding_loss": lambda L, t: L.cosine_embedding_loss(t(V), t(V2), t(np.array([1.0, -1, 1])), 0.0, 0),
    "triplet_margin_loss": lambda L, t: L.triplet_margin_loss(t(V), t(V2), t(V * 2), 1.0, 2, 1e-6, True, 2),
    "binary_cross_entropy_with_logits": lambda L, t: L.binary_cross_entropy_with_logits(t(V), t(np.abs(V2) % 1),
                                                                                        None, None, 0),
    "ctc_loss": lambda L, t: L.ctc_loss(t(X3.transpose(2, 0, 1).copy()).log_softmax(2), t(np.array([[1, 2], [3, 1]])),
                                        [6, 5], [2, 2], 0, 2),
    "affine_grid_generator": lambda L, t: L.affine_grid_generator(t(RNG_W((2, 2, 3))), [2, 1, 3, 4], False),
    "grid_sampler": lambda L, t: L.grid_sampler(t(X4), t(np.tanh(RNG_W((2, 3, 3, 2)))), 0, 2, False),
    "grid_sampler_2d": lambda L, t: L.grid_sampler_2d(t(X4), t(np.tanh(RNG_W((2, 3, 3, 2)))), 1, 1, True),
    "grid_sampler_3d": lambda L, t: L.grid_sampler_3d(t(X5), t(1.2 * np.tanh(RNG_W((2, 2, 3, 2, 3)))), 0, 0, False),
}

_W = {}


def RNG_W(shape):
    """A fixed array per shape, so both libraries see the same weights."""
    if shape not in _W:
        _W[shape] = RNG.standard_normal(shape)
    return _W[shape]


def _np(v):
    return tuple(_np(a) for a in v) if isinstance(v, tuple) else v.detach().cpu().numpy()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_toplevel_function_matches_torch(name):
    t_out = PROGRAMS[name](torch, torch.tensor)
    e_out = PROGRAMS[name](ember, ember.tensor)
    t_out, e_out = _np(t_out), _np(e_out)
    for a, b in zip(t_out if isinstance(t_out, tuple) else (t_out,), e_out if isinstance(e_out, tuple) else (e_out,)):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-10)


def test_every_wrapper_is_tested_and_has_torch_signature():
    from ember import _nn_toplevel
    untested = (set(_nn_toplevel.__all__) - set(PROGRAMS) - {n for n in _nn_toplevel.__all__ if n.endswith("_")}
                - {"conv_tbc"})                    # test_conv_tbc_matches_torch
    assert not untested
    for name in _nn_toplevel.__all__:
        assert hasattr(torch, name), name


def test_inplace_variants():
    for name, args in [("selu_", ()), ("celu_", (0.5,)), ("threshold_", (0.1, -1.0)), ("dropout_", (0.0, True)),
                       ("feature_dropout_", (1.0, True)), ("alpha_dropout_", (0.0, True)),
                       ("feature_alpha_dropout_", (0.0, True)), ("rrelu_", ())]:
        t, e = torch.tensor(X4), ember.tensor(X4)
        rt, re_ = getattr(torch, name)(t, *args), getattr(ember, name)(e, *args)
        assert re_ is e or re_.data_ptr() == e.data_ptr()
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,args", [("kl_div", (V, np.abs(V2))), ("hinge_embedding_loss", (V, np.sign(V2))),
                                       ("margin_ranking_loss", (V, V2, np.sign(V))),
                                       ("triplet_margin_loss", (V, V2, 2 * V)),
                                       ("binary_cross_entropy_with_logits", (V, np.abs(V2) % 1))])
def test_toplevel_losses_default_to_unreduced_as_torch(name, args):
    t = getattr(torch, name)(*[torch.tensor(a) for a in args])
    e = getattr(ember, name)(*[ember.tensor(a) for a in args])
    assert tuple(t.shape) == tuple(e.shape) and t.dim() > 0
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10)
    with pytest.raises(ValueError):          # PyTorch leaves an int outside 0..2 unchecked; ember refuses it
        getattr(ember, name)(*[ember.tensor(a) for a in args], reduction=5)


def test_conv_tbc_matches_torch():
    x, w, b = RNG.standard_normal((7, 2, 3)), RNG.standard_normal((3, 3, 4)), RNG.standard_normal(4)
    for pad in (0, 2):
        ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
        es = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
        t, e = torch.conv_tbc(*ts, pad), ember.conv_tbc(*es, pad)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10)
        t.sum().backward()
        e.sum().backward()
        for a, c in zip(ts, es):
            np.testing.assert_allclose(c.grad.numpy(), a.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(ember.nn.functional.conv_tbc(*es, pad).detach().numpy(), t.detach().numpy(),
                                   rtol=1e-10)
    for args in [(x[0], w, b), (x, w[:, :2], b), (x, w, b[:3])]:
        with pytest.raises(Exception) as te:
            torch.conv_tbc(*[torch.tensor(a) for a in args])
        with pytest.raises(type(te.value)):
            ember.conv_tbc(*[ember.tensor(a) for a in args])


def test_nllloss2d_and_functional_helpers():
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        m = ember.nn.NLLLoss2d(reduction="sum")
    x, tg = RNG.standard_normal((2, 3, 4, 4)), RNG.integers(0, 3, (2, 4, 4))
    with pytest.warns(FutureWarning):
        tm = torch.nn.NLLLoss2d(reduction="sum")
    np.testing.assert_allclose(m(ember.tensor(x), ember.tensor(tg)).item(),
                               tm(torch.tensor(x), torch.tensor(tg)).item())
    assert ember.nn.functional.Tensor is ember.Tensor
    ember.nn.functional.assert_int_or_pair((1, 2), "k", "{} bad")
    with pytest.raises(AssertionError, match="k bad"):
        ember.nn.functional.assert_int_or_pair((1, 2, 3), "k", "{} bad")


@pytest.mark.parametrize("size,channels", [(3, 7), (5, 4), (2, 6), (1, 3), (9, 5)])
def test_cross_map_lrn2d_matches_torch(size, channels):
    x = RNG.standard_normal((2, channels, 3, 4))
    tm, em = torch.nn.CrossMapLRN2d(size, 0.1, 0.6, 2.0), ember.nn.CrossMapLRN2d(size, 0.1, 0.6, 2.0)
    assert repr(tm) == repr(em)
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    t, e = tm(tx), em(ex)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10)
    with pytest.raises(ValueError):
        em(ember.tensor(x[0]))
    # the gradient is the exact derivative of this forward (PyTorch's own backward approximates it)
    w = RNG.standard_normal(x.shape)
    (e * ember.tensor(w)).sum().backward()
    h, flat = 1e-6, x.reshape(-1)
    for i in RNG.choice(flat.size, 6, replace=False):
        xp, xm = flat.copy(), flat.copy()
        xp[i] += h
        xm[i] -= h
        f = [(tm(torch.tensor(v.reshape(x.shape))).detach().numpy() * w).sum() for v in (xp, xm)]
        np.testing.assert_allclose(ex.grad.numpy().reshape(-1)[i], (f[0] - f[1]) / (2 * h), rtol=1e-5, atol=1e-7)


def _asm_pair(**kw):
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], **kw).double()
    em = ember.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], dtype=ember.float64, **kw)
    assert list(tm.state_dict()) == list(em.state_dict())
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm, em


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(head_bias):
    tm, em = _asm_pair(div_value=2.0, head_bias=head_bias)
    x, tg = RNG.standard_normal((9, 16)), np.array([0, 3, 4, 9, 10, 14, 15, 19, 2])
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    t, e = tm(tx, torch.tensor(tg)), em(ex, ember.tensor(tg))
    np.testing.assert_allclose(e.output.detach().numpy(), t.output.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(e.loss.item(), t.loss.item(), rtol=1e-10)
    t.loss.backward()
    e.loss.backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (n, p), (_, q) in zip(tm.named_parameters(), em.named_parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=n)
    np.testing.assert_allclose(em.log_prob(ex).detach().numpy(), tm.log_prob(tx).detach().numpy(), rtol=1e-10)
    big = RNG.standard_normal((50, 16)) * 3
    assert (em.predict(ember.tensor(big)).numpy() == tm.predict(torch.tensor(big)).numpy()).all()
    e1 = em(ex[0], ember.tensor(tg[0]))
    assert e1.output.dim() == 0
    np.testing.assert_allclose(e1.output.item(), tm(tx[0], torch.tensor(tg[0])).output.item(), rtol=1e-10)


@pytest.mark.filterwarnings("ignore:Initializing zero-element")      # both warn for the empty 3rd projection
def test_adaptive_log_softmax_errors_match_torch():
    for args in [(16, 20, []), (16, 20, [4, 4]), (16, 20, [0, 5]), (16, 20, [5, 20]), (16, 20, [6, 3])]:
        with pytest.raises(ValueError):
            torch.nn.AdaptiveLogSoftmaxWithLoss(*args)
        with pytest.raises(ValueError):
            ember.nn.AdaptiveLogSoftmaxWithLoss(*args)
    tm, em = _asm_pair()
    for x, tg in [(np.zeros((3, 16)), np.array([1, 2])), (np.zeros((3, 16)), np.array([1, 2, 20])),
                  (np.zeros((3, 16)), np.zeros((3, 1), dtype=np.int64)), (np.zeros((1, 3, 16)), np.array([1]))]:
        with pytest.raises(Exception) as te:
            tm(torch.tensor(x), torch.tensor(tg))
        with pytest.raises(type(te.value)):
            em(ember.tensor(x), ember.tensor(tg))

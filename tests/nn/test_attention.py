"""scaled_dot_product_attention, multi_head_attention_forward, MultiheadAttention and
TransformerEncoderLayer: numpy references, masks, PyTorch's errors, gradcheck, and (where torch
is installed) outputs and gradients against torch with the weights copied across."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck

F64 = ember.float64


def _np(t):
    return t.detach().numpy()


def _t(a, grad=False):
    return ember.tensor(a, requires_grad=grad)


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _ref_sdpa(q, k, v, mask=None, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return _softmax(s) @ v


rng = np.random.default_rng(0)
Q, K, V = rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 3, 5, 8)), rng.standard_normal((2, 3, 5, 6))


# ----------------------------------------------------------------------------- sdpa
def test_sdpa_matches_numpy():
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(_t(Q), _t(K), _t(V))), _ref_sdpa(Q, K, V),
                               atol=1e-12)
    np.testing.assert_allclose(_np(F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), scale=0.3)),
                               _ref_sdpa(Q, K, V, scale=0.3), atol=1e-12)


def test_sdpa_masks_and_causal():
    bm = rng.random((4, 5)) > 0.3
    bm[:, 0] = True
    out = F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), attn_mask=_t(bm))
    np.testing.assert_allclose(_np(out), _ref_sdpa(Q, K, V, bm), atol=1e-12)
    fm = rng.standard_normal((3, 4, 5))
    out = F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), attn_mask=_t(fm))
    np.testing.assert_allclose(_np(out), _ref_sdpa(Q, K, V, fm), atol=1e-12)
    causal = np.tril(np.ones((4, 5), dtype=bool))
    out = F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), is_causal=True)
    np.testing.assert_allclose(_np(out), _ref_sdpa(Q, K, V, causal), atol=1e-12)
    # the first query sees only the first key
    np.testing.assert_allclose(_np(out)[..., 0, :], V[..., 0, :], atol=1e-12)


def test_sdpa_fully_masked_row_gives_zeros_and_finite_grads():
    bm = np.ones((4, 5), dtype=bool)
    bm[1] = False
    q = _t(Q, True)
    out = F.scaled_dot_product_attention(q, _t(K), _t(V), attn_mask=_t(bm))
    assert np.all(_np(out)[..., 1, :] == 0)
    out.sum().backward()
    assert np.all(np.isfinite(_np(q.grad))) and np.all(_np(q.grad)[..., 1, :] == 0)


def test_sdpa_gqa_and_dropout():
    q = rng.standard_normal((1, 6, 4, 8))
    out = F.scaled_dot_product_attention(_t(q), _t(K[:1]), _t(V[:1]), enable_gqa=True)
    ref = _ref_sdpa(q, np.repeat(K[:1], 2, 1), np.repeat(V[:1], 2, 1))
    np.testing.assert_allclose(_np(out), ref, atol=1e-12)
    ember.manual_seed(0)
    # dropout_p = 1 drops every weight
    assert np.all(_np(F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), dropout_p=1.0)) == 0)


def test_sdpa_gradcheck():
    q, k, v = (ember.randn(1, 2, 3, 4, dtype=F64, requires_grad=True) for _ in range(3))
    m = _t(np.array([[True, False, True], [True, True, False], [False, True, True]]))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=m), (q, k, v))
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), attn_mask=_t(np.ones((4, 5), bool)),
                                            is_causal=True),
     RuntimeError, "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"),
    (lambda: F.scaled_dot_product_attention(_t(Q), _t(K).float(), _t(V)), RuntimeError,
     "Expected query, key, and value to have the same dtype, but got query.dtype: double key.dtype: float"),
    (lambda: F.scaled_dot_product_attention(_t(Q), _t(K), _t(V), attn_mask=ember.ones(4, 5, dtype=ember.int64)),
     RuntimeError, "Expected attn_mask dtype to be bool or float or to match query dtype"),
])
def test_sdpa_errors(fn, exc, msg):
    with pytest.raises(exc, match=None) as info:
        fn()
    assert msg in str(info.value)


# ----------------------------------------------------------------------------- multi-head attention
def _ref_mha(q, k, v, m, key_padding_mask=None, attn_mask=None):
    """numpy reference of MultiheadAttention (seq-first, packed projection)."""
    p = {n: _np(t) for n, t in m.named_parameters()}
    E, H = m.embed_dim, m.num_heads
    wq, wk, wv = np.split(p["in_proj_weight"], 3)
    bq, bk, bv = np.split(p["in_proj_bias"], 3)
    qp, kp, vp = q @ wq.T + bq, k @ wk.T + bk, v @ wv.T + bv         # (L, N, E)
    L, N, _ = q.shape
    S = k.shape[0]
    hd = E // H
    split = lambda x, n: x.reshape(n, N, H, hd).transpose(1, 2, 0, 3)  # noqa: E731  (N, H, n, hd)
    s = split(qp, L) @ np.swapaxes(split(kp, S), -1, -2) / np.sqrt(hd)
    if attn_mask is not None:
        s = np.where(attn_mask, -np.inf, s)
    if key_padding_mask is not None:
        s = np.where(key_padding_mask[:, None, None, :], -np.inf, s)
    w = _softmax(s)
    o = (w @ split(vp, S)).transpose(2, 0, 1, 3).reshape(L, N, E)
    return o @ p["out_proj.weight"].T + p["out_proj.bias"], w.mean(1)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_matches_numpy(need_weights):
    ember.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dtype=F64)
    with ember.no_grad():
        m.in_proj_bias.normal_()
        m.out_proj.bias.normal_()
    q, k, v = rng.standard_normal((4, 3, 8)), rng.standard_normal((5, 3, 8)), rng.standard_normal((5, 3, 8))
    kpm = rng.random((3, 5)) > 0.7
    kpm[:, 0] = False
    am = rng.random((4, 5)) > 0.8
    am[:, 0] = False
    out, w = m(_t(q), _t(k), _t(v), key_padding_mask=_t(kpm), attn_mask=_t(am), need_weights=need_weights)
    ref_o, ref_w = _ref_mha(q, k, v, m, kpm, am)
    np.testing.assert_allclose(_np(out), ref_o, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(_np(w), ref_w, atol=1e-12)
    else:
        assert w is None
    # batch_first and unbatched agree with the seq-first batched result
    mb = nn.MultiheadAttention(8, 2, batch_first=True, dtype=F64)
    mb.load_state_dict(m.state_dict())
    ob, _ = mb(_t(q.swapaxes(0, 1)), _t(k.swapaxes(0, 1)), _t(v.swapaxes(0, 1)), key_padding_mask=_t(kpm),
               attn_mask=_t(am))
    np.testing.assert_allclose(_np(ob).swapaxes(0, 1), ref_o, atol=1e-12)
    ou, wu = m(_t(q[:, 0]), _t(k[:, 0]), _t(v[:, 0]), attn_mask=_t(am))
    np.testing.assert_allclose(_np(ou), _ref_mha(q[:, :1], k[:, :1], v[:, :1], m, None, am)[0][:, 0], atol=1e-12)
    assert wu.shape == (4, 5)


def test_mha_parameters_init_and_repr():
    m = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                    "out_proj.bias"]
    assert np.all(_np(m.in_proj_bias) == 0) and np.all(_np(m.out_proj.bias) == 0)
    bound = np.sqrt(6 / (8 + 24))                           # xavier_uniform_ of (24, 8)
    assert np.abs(_np(m.in_proj_weight)).max() <= bound
    assert repr(m) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
                       "out_features=8, bias=True)\n)")
    m2 = nn.MultiheadAttention(8, 2, kdim=4, vdim=6, add_bias_kv=True, bias=False)
    assert [(n, tuple(p.shape)) for n, p in m2.named_parameters()] == [
        ("q_proj_weight", (8, 8)), ("k_proj_weight", (8, 4)), ("v_proj_weight", (8, 6)), ("bias_k", (1, 1, 8)),
        ("bias_v", (1, 1, 8)), ("out_proj.weight", (8, 8))]
    out, w = m2(ember.randn(3, 2, 8), ember.randn(5, 2, 4), ember.randn(5, 2, 6), average_attn_weights=False)
    assert out.shape == (3, 2, 8) and w.shape == (2, 2, 3, 6)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(8, 3)


def test_mha_mismatched_mask_types_warn():
    m = nn.MultiheadAttention(4, 2)
    x = ember.randn(3, 1, 4)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        m(x, x, x, key_padding_mask=ember.zeros(1, 3, dtype=ember.bool), attn_mask=ember.zeros(3, 3))


def test_transformer_encoder_layer_shapes_and_modes():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    x = ember.randn(3, 5, 8)
    y = layer(x)
    assert y.shape == (3, 5, 8)
    # post-norm output is layer-normalized per position
    np.testing.assert_allclose(_np(y).mean(-1), 0, atol=1e-5)
    mask = nn.modules.transformer.generate_square_subsequent_mask(5)
    assert np.array_equal(np.isinf(_np(mask)), np.triu(np.ones((5, 5), bool), 1))
    yc = layer(x, src_mask=mask, is_causal=True)
    # causal: the first position does not depend on later ones
    x2 = x.clone()
    x2[:, 1:] = 0
    np.testing.assert_allclose(_np(layer(x2, src_mask=mask))[:, 0], _np(yc)[:, 0], atol=1e-5)
    pre = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True, activation="gelu")
    assert pre(ember.randn(5, 3, 8)).shape == (5, 3, 8)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not foo"):
        nn.TransformerEncoderLayer(8, 2, activation="foo")
    with pytest.warns(UserWarning, match="enable_nested_tensor is True"):
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2, norm=nn.LayerNorm(8))
    assert len(enc.layers) == 2 and enc(ember.randn(5, 3, 8)).shape == (5, 3, 8)
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight


# ----------------------------------------------------------------------------- against torch
def _copy_to_torch(torch, em, tm):
    tm.load_state_dict({k: torch.from_numpy(_np(v).copy()) for k, v in em.state_dict().items()})


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("kw", [dict(), dict(kdim=4, vdim=6, add_bias_kv=True, add_zero_attn=True)])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_against_torch(kw, need_weights):
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, batch_first=True, dtype=F64, **kw)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64, **kw)
    _copy_to_torch(torch, m, tm)
    q = rng.standard_normal((3, 4, 8))
    k = rng.standard_normal((3, 5, kw.get("kdim", 8)))
    v = rng.standard_normal((3, 5, kw.get("vdim", 8)))
    kpm = rng.random((3, 5)) > 0.7
    kpm[:, 0] = False
    am = rng.standard_normal((4, 5))
    eq = _t(q, True)
    tq = torch.tensor(q, requires_grad=True)
    eo, ew = m(eq, _t(k), _t(v), key_padding_mask=_t(kpm), attn_mask=_t(am), need_weights=need_weights)
    to, tw = tm(tq, torch.tensor(k), torch.tensor(v), key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am),
                need_weights=need_weights)
    np.testing.assert_allclose(_np(eo), to.detach().numpy(), atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(_np(ew), tw.detach().numpy(), atol=1e-12)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(_np(eq.grad), tq.grad.numpy(), atol=1e-10)
    for (n, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
        np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), atol=1e-10, err_msg=n)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_layer_against_torch(norm_first, activation):
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    m = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=norm_first, activation=activation,
                                   dtype=F64)
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=norm_first, activation=activation,
                                          dtype=torch.float64)
    _copy_to_torch(torch, m, tm)
    m.eval()
    tm.eval()
    x = rng.standard_normal((3, 5, 8))
    kpm = rng.random((3, 5)) > 0.7
    kpm[:, 0] = False
    ex, tx = _t(x, True), torch.tensor(x, requires_grad=True)
    eo = m(ex, src_key_padding_mask=_t(kpm))
    to = tm(tx, src_key_padding_mask=torch.tensor(kpm))
    valid = ~kpm                                # torch's fast path may zero padded positions
    np.testing.assert_allclose(_np(eo)[valid], to.detach().numpy()[valid], atol=1e-10)
    m.train()
    tm.train()
    for mod in (m, tm):
        for name, sub in mod.named_modules():
            if "dropout" in name:
                sub.p = 0.0
        mod.self_attn.dropout = 0.0
    eo = m(ex, src_key_padding_mask=_t(kpm))
    to = tm(tx, src_key_padding_mask=torch.tensor(kpm))
    np.testing.assert_allclose(_np(eo), to.detach().numpy(), atol=1e-10)
    eo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(_np(ex.grad), tx.grad.numpy(), atol=1e-9)


def test_sdpa_against_torch():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    fm = rng.standard_normal((3, 4, 5))
    fm[0, 1] = -np.inf
    for kw_e, kw_t in [({}, {}), ({"is_causal": True}, {"is_causal": True}),
                       ({"attn_mask": _t(fm)}, {"attn_mask": torch.tensor(fm)})]:
        eq, tq = _t(Q, True), torch.tensor(Q, requires_grad=True)
        eo = F.scaled_dot_product_attention(eq, _t(K), _t(V), **kw_e)
        to = TF.scaled_dot_product_attention(tq, torch.tensor(K), torch.tensor(V), **kw_t)
        np.testing.assert_allclose(_np(eo), to.detach().numpy(), atol=1e-12)
        eo.sum().backward()
        to.sum().backward()
        np.testing.assert_allclose(_np(eq.grad), tq.grad.numpy(), atol=1e-10)

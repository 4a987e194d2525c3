"""TransformerDecoderLayer, TransformerDecoder and Transformer against torch.nn with the weights copied
across (state dicts transfer both ways): masks (causal, key padding), batch_first, norm_first, unbatched
input, gradients in float64, eval mode and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy()


def _pair(em, tm):
    """Copy ember's weights into the torch module; both in eval mode (dropout off), float64."""
    tm.double()
    em.double()
    tm.load_state_dict({k: torch.from_numpy(_np(v).copy()) for k, v in em.state_dict().items()})
    assert list(em.state_dict()) == list(tm.state_dict())
    return em.eval(), tm.eval()


def _inputs(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _check(eo, to, params, tparams, inputs, atol=1e-10):
    np.testing.assert_allclose(_np(eo), to.detach().numpy(), atol=atol)
    w = np.random.default_rng(9).standard_normal(tuple(to.shape))
    (eo * ember.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for (name, pe), (_, pt) in zip(params, tparams):
        np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), atol=atol, err_msg=name)
    for e, t in inputs:
        np.testing.assert_allclose(_np(e.grad), t.grad.numpy(), atol=atol)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer_matches_torch(batch_first, norm_first, activation):
    kw = dict(dim_feedforward=12, dropout=0.1, activation=activation, batch_first=batch_first, norm_first=norm_first)
    em, tm = _pair(nn.TransformerDecoderLayer(8, 2, **kw), torch.nn.TransformerDecoderLayer(8, 2, **kw))
    T, S, N = 4, 5, 3
    tgt = _inputs((N, T, 8) if batch_first else (T, N, 8), 0)
    mem = _inputs((N, S, 8) if batch_first else (S, N, 8), 1)
    causal_e, causal_t = nn.Transformer.generate_square_subsequent_mask(T), \
        torch.nn.Transformer.generate_square_subsequent_mask(T)
    np.testing.assert_array_equal(_np(causal_e), causal_t.numpy())
    kpm = np.zeros((N, S), bool)
    kpm[0, -2:] = True
    tkpm = np.zeros((N, T), bool)
    tkpm[1, -1] = True
    eo = em(tgt[0], mem[0], tgt_mask=causal_e.double(), memory_key_padding_mask=ember.tensor(kpm),
            tgt_key_padding_mask=ember.tensor(tkpm), tgt_is_causal=True)
    to = tm(tgt[1], mem[1], tgt_mask=causal_t.double(), memory_key_padding_mask=torch.tensor(kpm),
            tgt_key_padding_mask=torch.tensor(tkpm), tgt_is_causal=True)
    _check(eo, to, list(em.named_parameters()), list(tm.named_parameters()), [tgt, mem])


def test_decoder_layer_unbatched_and_memory_mask():
    em, tm = _pair(nn.TransformerDecoderLayer(6, 3, 10), torch.nn.TransformerDecoderLayer(6, 3, 10))
    tgt, mem = _inputs((4, 6), 2), _inputs((5, 6), 3)
    mm = np.random.default_rng(4).random((4, 5)) > 0.6
    mm[:, 0] = False
    eo = em(tgt[0], mem[0], memory_mask=ember.tensor(mm))
    to = tm(tgt[1], mem[1], memory_mask=torch.tensor(mm))
    assert tuple(eo.shape) == (4, 6) and eo.dtype == ember.float64
    _check(eo, to, list(em.named_parameters()), list(tm.named_parameters()), [tgt, mem])


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_stack_matches_torch(batch_first):
    def build(lib):
        layer = lib.nn.TransformerDecoderLayer(8, 4, 16, batch_first=batch_first)
        return lib.nn.TransformerDecoder(layer, 2, norm=lib.nn.LayerNorm(8))
    em, tm = _pair(build(ember), build(torch))
    assert len(em.layers) == 2 and em.layers[0].linear1.weight is not em.layers[1].linear1.weight
    T, S, N = 5, 3, 2
    tgt = _inputs((N, T, 8) if batch_first else (T, N, 8), 5)
    mem = _inputs((N, S, 8) if batch_first else (S, N, 8), 6)
    # tgt_is_causal=None: the causal mask is detected, as in PyTorch
    eo = em(tgt[0], mem[0], tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=ember.float64))
    to = tm(tgt[1], mem[1], tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64))
    _check(eo, to, list(em.named_parameters()), list(tm.named_parameters()), [tgt, mem])


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_matches_torch(norm_first):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16,
              batch_first=True, norm_first=norm_first)
    with pytest.warns(UserWarning) if norm_first else _nothing():
        tmod = torch.nn.Transformer(**kw)
    em, tm = _pair(nn.Transformer(**kw), tmod)
    src, tgt = _inputs((2, 5, 8), 7), _inputs((2, 4, 8), 8)
    skpm = np.zeros((2, 5), bool)
    skpm[1, 3:] = True
    eo = em(src[0], tgt[0], tgt_mask=nn.Transformer.generate_square_subsequent_mask(4).double(),
            src_key_padding_mask=ember.tensor(skpm), memory_key_padding_mask=ember.tensor(skpm))
    to = tm(src[1], tgt[1], tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4).double(),
            src_key_padding_mask=torch.tensor(skpm), memory_key_padding_mask=torch.tensor(skpm))
    assert tuple(eo.shape) == (2, 4, 8)
    _check(eo, to, list(em.named_parameters()), list(tm.named_parameters()), [src, tgt])


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_transformer_init_and_errors():
    m = nn.Transformer(8, 2, 1, 1, 16)
    names = [n for n, _ in m.named_parameters()]
    assert names == [n for n, _ in torch.nn.Transformer(8, 2, 1, 1, 16).named_parameters()]
    # xavier_uniform_ on every matrix: |w| <= sqrt(6 / (fan_in + fan_out))
    w = _np(m.decoder.layers[0].linear1.weight)
    assert np.abs(w).max() <= np.sqrt(6 / (8 + 16)) + 1e-7
    for lib in (ember, torch):
        t = lib.nn.Transformer(8, 2, 1, 1, 16)
        with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
            t(lib.zeros(5, 2, 8), lib.zeros(4, 3, 8))
        with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
            t(lib.zeros(5, 2, 8), lib.zeros(4, 2, 6))
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not foo"):
            lib.nn.TransformerDecoderLayer(8, 2, activation="foo")
        layer = lib.nn.TransformerDecoderLayer(8, 2, 16)
        with pytest.raises(RuntimeError, match="Need attn_mask"):
            layer(lib.zeros(4, 2, 8), lib.zeros(3, 2, 8), tgt_is_causal=True)


def test_custom_activation_module_and_train_mode_dropout():
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.5, activation=nn.GELU())
    assert isinstance(layer.activation, nn.GELU) and "activation" in dict(layer.named_children())
    x, mem = ember.randn(4, 2, 8), ember.randn(3, 2, 8)
    layer.train()
    a, b = layer(x, mem), layer(x, mem)
    assert not np.allclose(_np(a), _np(b))
    layer.eval()
    np.testing.assert_array_equal(_np(layer(x, mem)), _np(layer(x, mem)))

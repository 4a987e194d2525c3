"""Memory formats against torch: the format objects, strides of to / contiguous / clone / *_like / empty,
is_contiguous(memory_format=), and the layout conv2d / max_pool2d / batch_norm / Conv2d return."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _x(m, *shape):
    return m.arange(float(np.prod(shape))).reshape(*shape)


def test_format_objects():
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        f = getattr(ember, name)
        assert isinstance(f, ember.memory_format)
        assert repr(f) == f"ember.{name}" and repr(getattr(torch, name)) == f"torch.{name}"
        assert pickle.loads(pickle.dumps(f)) is f


CASES = {
    "to channels_last": lambda m: m.zeros(2, 3, 4, 5).to(memory_format=m.channels_last),
    "to dtype + channels_last": lambda m: _x(m, 2, 3, 4, 5).to(m.float64, memory_format=m.channels_last),
    "to channels_last_3d": lambda m: m.zeros(2, 3, 4, 5, 6).to(memory_format=m.channels_last_3d),
    "to contiguous_format from cl": lambda m: m.zeros(2, 3, 4, 5).to(memory_format=m.channels_last)
    .to(memory_format=m.contiguous_format),
    "contiguous(channels_last)": lambda m: _x(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last),
    "contiguous() of cl": lambda m: _x(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last).contiguous(),
    "clone(channels_last)": lambda m: _x(m, 2, 3, 4, 5).clone(memory_format=m.channels_last),
    "clone(preserve) transposed": lambda m: _x(m, 3, 4).t().clone(memory_format=m.preserve_format),
    "clone(preserve) sliced": lambda m: _x(m, 2, 6, 4, 5).permute(0, 2, 3, 1)[:, ::2]
    .clone(memory_format=m.preserve_format),
    "clone(contiguous_format) of cl": lambda m: _x(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last)
    .clone(memory_format=m.contiguous_format),
    "empty_like(preserve) of cl": lambda m: m.empty_like(m.zeros(2, 3, 4, 5).to(memory_format=m.channels_last),
                                                         memory_format=m.preserve_format),
    "zeros_like(channels_last)": lambda m: m.zeros_like(m.zeros(2, 3, 4, 5), memory_format=m.channels_last),
    "ones_like(preserve) expanded": lambda m: m.ones_like(m.zeros(3, 1).expand(3, 4), memory_format=m.preserve_format),
    "full_like(channels_last_3d)": lambda m: m.full_like(m.zeros(1, 2, 3, 4, 5), 7.0,
                                                          memory_format=m.channels_last_3d),
    "empty(channels_last)": lambda m: m.empty(2, 3, 4, 5, memory_format=m.channels_last),
    "empty(channels_last) size 1 dims": lambda m: m.empty(1, 3, 1, 5, memory_format=m.channels_last),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_strides_match_torch(name):
    e, t = CASES[name](ember), CASES[name](torch)
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride(), (e.stride(), t.stride())
    if name.startswith(("to", "contiguous", "clone")) or name.startswith("full"):
        np.testing.assert_array_equal(np.asarray(e.tolist()), t.numpy())


@pytest.mark.parametrize("make", [
    lambda m: _x(m, 2, 3, 4, 5), lambda m: _x(m, 2, 3, 4, 5).to(memory_format=m.channels_last),
    lambda m: _x(m, 2, 1, 4, 5), lambda m: _x(m, 2, 3, 1, 1), lambda m: _x(m, 2, 3, 4, 5)[:, :1],
    lambda m: _x(m, 2, 3, 4, 5, 6).to(memory_format=m.channels_last_3d), lambda m: _x(m, 3, 4),
    lambda m: _x(m, 2, 3, 4, 5).permute(0, 2, 3, 1), lambda m: _x(m, 0, 3, 4, 5),
])
def test_is_contiguous_matches_torch(make):
    e, t = make(ember), make(torch)
    for f in ("contiguous_format", "channels_last", "channels_last_3d"):
        assert e.is_contiguous(memory_format=getattr(ember, f)) == t.is_contiguous(memory_format=getattr(torch, f)), f


def test_to_returns_self_when_already_in_format():
    x = ember.zeros(2, 3, 4, 5).to(memory_format=ember.channels_last)
    assert x.to(memory_format=ember.channels_last) is x
    assert x.contiguous(memory_format=ember.channels_last) is x


@pytest.mark.parametrize("fn", [
    lambda m: m.zeros(2, 3).to(memory_format=m.channels_last),
    lambda m: m.zeros(2, 3, 4).contiguous(memory_format=m.channels_last),
    lambda m: m.zeros(2, 3, 4, 5).clone(memory_format=m.channels_last_3d),
    lambda m: m.empty(2, 3, memory_format=m.channels_last),
    lambda m: m.zeros(2, 3).t().contiguous(memory_format=m.preserve_format),
])
def test_rank_errors_match_torch(fn):
    with pytest.raises(RuntimeError) as te:
        fn(torch)
    with pytest.raises(RuntimeError) as ee:
        fn(ember)
    assert str(ee.value) == str(te.value)


NN = {
    "conv2d cl input": lambda m, x, xc, w: m.nn.functional.conv2d(x, w, padding=1),
    "conv2d cl weight": lambda m, x, xc, w: m.nn.functional.conv2d(xc, w.to(memory_format=m.channels_last)),
    "conv2d contiguous": lambda m, x, xc, w: m.nn.functional.conv2d(xc, w),
    "max_pool2d": lambda m, x, xc, w: m.nn.functional.max_pool2d(x, 2),
    "max_pool2d indices": lambda m, x, xc, w: m.nn.functional.max_pool2d(x, 2, return_indices=True)[1],
    "batch_norm eval": lambda m, x, xc, w: m.nn.functional.batch_norm(x, m.zeros(3, dtype=m.float64),
                                                                      m.ones(3, dtype=m.float64)),
    "batch_norm train": lambda m, x, xc, w: m.nn.functional.batch_norm(x, None, None, training=True),
    "batch_norm contiguous": lambda m, x, xc, w: m.nn.functional.batch_norm(xc, None, None, training=True),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_layouts_match_torch(name):
    rng = np.random.default_rng(3)
    xn, wn = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((4, 3, 3, 3))
    outs = []
    for m in (torch, ember):
        xc = m.tensor(xn)
        x = xc.to(memory_format=m.channels_last)
        outs.append(NN[name](m, x, xc, m.tensor(wn)))
    t, e = outs
    assert e.stride() == t.stride()
    np.testing.assert_allclose(np.asarray(e.tolist()), t.numpy(), rtol=1e-9, atol=1e-9)


def test_channels_last_gradients_match_torch():
    rng = np.random.default_rng(4)
    xn = rng.standard_normal((2, 3, 6, 6))
    grads = []
    for m in (torch, ember):
        m.manual_seed(0)
        x = m.tensor(xn).to(memory_format=m.channels_last).requires_grad_()
        w = m.tensor(rng.standard_normal((4, 3, 3, 3)) if m is torch else grads[0][1], requires_grad=True)
        y = m.nn.functional.max_pool2d(m.nn.functional.batch_norm(m.nn.functional.conv2d(x, w), None, None,
                                                                  training=True), 2)
        (y * y).sum().backward()
        grads.append((np.asarray(x.grad.tolist()), w.detach().numpy() if m is torch else None,
                      np.asarray(w.grad.tolist())))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(grads[1][2], grads[0][2], rtol=1e-9, atol=1e-9)


def test_module_to_memory_format():
    for m in (torch, ember):
        net = m.nn.Sequential(m.nn.Conv2d(3, 4, 3), m.nn.Linear(6, 2))
        net.to(memory_format=m.channels_last)
        assert net[0].weight.stride() == (27, 1, 9, 3) and net[1].weight.stride() == (6, 1)
        assert isinstance(net[0].weight, m.nn.Parameter)


# ---------------------------------------------------------------- preserve_format is the default
#: inputs of several layouts: dense non-overlapping ones keep their strides, the others get dense strides
#: in their stride order (PyTorch's empty_like / clone rule)
LAYOUTS = {
    "contiguous": lambda m: _x(m, 2, 3, 4, 5),
    "transposed": lambda m: _x(m, 4, 5).t(),
    "permuted 4-d": lambda m: _x(m, 2, 3, 4, 5).permute(3, 1, 0, 2),
    "channels_last": lambda m: _x(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last),
    "channels_last_3d": lambda m: _x(m, 2, 3, 2, 4, 5).contiguous(memory_format=m.channels_last_3d),
    "sliced (not dense)": lambda m: _x(m, 2, 3, 4, 5)[:, :, ::2],
    "sliced transposed": lambda m: _x(m, 3, 4, 5).transpose(0, 2)[::2],
    "channels_last sliced": lambda m: _x(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last)[:, :, 1:3],
    "expanded": lambda m: _x(m, 5).expand(3, 5),
    "expanded transposed": lambda m: m.ones(3, 1, 4).expand(3, 2, 4).transpose(0, 2),
    "unsqueezed transposed": lambda m: _x(m, 2, 3).t().unsqueeze(1),
    "size-1 dims": lambda m: m.ones(4, 1, 3).transpose(0, 1),
    "narrowed": lambda m: _x(m, 2, 3, 4, 5)[:, 1:2],
    "0-dim": lambda m: m.tensor(2.0),
    "empty transposed": lambda m: m.empty(0, 3).t(),
}
LIKE_FNS = {
    "clone": lambda m, x: x.clone(),
    "torch.clone": lambda m, x: m.clone(x),
    "empty_like": lambda m, x: m.empty_like(x),
    "zeros_like float64": lambda m, x: m.zeros_like(x, dtype=m.float64),
    "ones_like": lambda m, x: m.ones_like(x),
    "full_like": lambda m, x: m.full_like(x, 7.0),
    "rand_like": lambda m, x: m.rand_like(x),
    "randn_like": lambda m, x: m.randn_like(x),
    "randint_like": lambda m, x: m.randint_like(x, 5),
    "to float64": lambda m, x: x.to(m.float64),
    ".float(channels_last) of float64": lambda m, x: x.double().float(
        memory_format=m.channels_last if x.dim() == 4 else m.preserve_format),
    "to copy=True": lambda m, x: x.to("cpu", copy=True),
    "clone(contiguous_format)": lambda m, x: x.clone(memory_format=m.contiguous_format),
    "zeros_like(contiguous_format)": lambda m, x: m.zeros_like(x, memory_format=m.contiguous_format),
}


@pytest.mark.parametrize("fn", sorted(LIKE_FNS))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_default_preserve_format_strides_match_torch(layout, fn):
    e, t = LIKE_FNS[fn](ember, LAYOUTS[layout](ember)), LIKE_FNS[fn](torch, LAYOUTS[layout](torch))
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride(), (e.stride(), t.stride())
    if fn in ("clone", "torch.clone", "ones_like", "full_like", "clone(contiguous_format)", "to float64",
              "to copy=True"):
        np.testing.assert_array_equal(np.asarray(e.tolist()), t.numpy())


def test_clone_of_transposed_is_transposed_and_contiguous_is_not():
    """A clone keeps the layout, so ``.view(-1)`` of a transposed clone fails as in PyTorch; ``contiguous()``
    and ``reshape`` still give row-major results."""
    for m in (torch, ember):
        c = _x(m, 3, 4).t().clone()
        assert not c.is_contiguous()
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            c.view(-1)
        assert c.contiguous().is_contiguous()
        assert c.reshape(-1).tolist() == _x(m, 3, 4).t().reshape(-1).tolist()


@pytest.mark.parametrize("make", [
    lambda m: _x(m, 3, 4).requires_grad_(),
    lambda m: _x(m, 4, 3).t().detach().requires_grad_(),
    lambda m: _x(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last).detach().requires_grad_(),
], ids=["contiguous", "transposed", "channels_last"])
def test_leaf_grad_follows_the_leaf_layout(make):
    """AccumulateGrad's layout contract: ``.grad`` of a dense leaf has the leaf's strides, whatever the
    incoming gradient's layout (here the transposed gradient of a permute)."""
    out = []
    for m in (torch, ember):
        p = make(m)
        dims = tuple(reversed(range(p.dim())))
        (p.permute(*dims) * 2).contiguous().sum().backward()
        out.append((p.grad.stride(), np.asarray(p.grad.tolist())))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])

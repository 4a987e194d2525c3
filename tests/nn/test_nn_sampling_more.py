"""interpolate's bicubic / area modes, grid_sample and affine_grid compared with PyTorch side by side
(values, shapes, float64 gradients with respect to input, grid and theta, error classes)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(11)


def _close(t, e, tol=1e-10):
    assert tuple(t.shape) == tuple(e.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _run(fn_t, fn_e, arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    es = [ember.tensor(a, requires_grad=True) for a in arrays]
    t, e = fn_t(*ts), fn_e(*es)
    _close(t, e)
    w = RNG.standard_normal(tuple(t.shape))
    (t * torch.tensor(w)).sum().backward()
    (e * ember.tensor(w)).sum().backward()
    for a, b in zip(ts, es):
        if b.grad is None:          # no path to this input (grid_sample 'nearest'): PyTorch's gradient is zero
            assert not a.grad.abs().sum().item()
        else:
            _close(a.grad, b.grad)


X4 = RNG.standard_normal((2, 3, 5, 6))


@pytest.mark.parametrize("kw", [dict(size=(7, 9), mode="bicubic"),
                                dict(size=(3, 4), mode="bicubic", align_corners=True),
                                dict(scale_factor=1.7, mode="bicubic"),
                                dict(scale_factor=1.7, mode="bicubic", recompute_scale_factor=True),
                                dict(size=(3, 4), mode="area"), dict(scale_factor=0.5, mode="area"),
                                dict(size=(8, 11), mode="area")])
def test_interpolate_bicubic_area_match_torch(kw):
    _run(lambda x: TF.interpolate(x, **kw), lambda x: EF.interpolate(x, **kw), [X4])


@pytest.mark.parametrize("x,kw", [(X4[0], dict(size=5, mode="area")), (RNG.standard_normal((1, 2, 4, 5, 6)),
                                                                       dict(size=(2, 3, 3), mode="area"))])
def test_interpolate_area_1d_3d(x, kw):
    _run(lambda a: TF.interpolate(a, **kw), lambda a: EF.interpolate(a, **kw), [x])


def test_interpolate_bicubic_errors():
    for x, kw in [(X4[0], dict(size=4, mode="bicubic")), (X4, dict(size=(4, 4), mode="area", align_corners=True))]:
        with pytest.raises(Exception) as te:
            TF.interpolate(torch.tensor(x), **kw)
        with pytest.raises(type(te.value)):
            EF.interpolate(ember.tensor(x), **kw)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners):
    g = RNG.uniform(-1.4, 1.4, (2, 4, 5, 2))
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    _run(lambda x, gr: TF.grid_sample(x, gr, **kw), lambda x, gr: EF.grid_sample(x, gr, **kw), [X4, g])


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_5d_matches_torch(mode, padding_mode, align_corners):
    x, g = RNG.standard_normal((2, 2, 3, 4, 5)), RNG.uniform(-1.4, 1.4, (2, 2, 3, 4, 3))
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    _run(lambda a, gr: TF.grid_sample(a, gr, **kw), lambda a, gr: EF.grid_sample(a, gr, **kw), [x, g])


def test_grid_sample_errors_match_torch():
    x, g = X4, RNG.uniform(-1, 1, (2, 4, 5, 2))
    cases = [(x, g, dict(mode="cubic")), (x, g, dict(padding_mode="wrap")), (x, g[:1], {}), (x, g[..., :1], {}),
             (x[0], g, {}), (x, g.astype(np.float32), {}), (x[None], g[None], {}),
             (RNG.standard_normal((2, 1, 2, 2, 2)), RNG.standard_normal((2, 1, 1, 1, 2)), {})]
    for a, b, kw in cases:
        with pytest.raises(Exception) as te:
            TF.grid_sample(torch.tensor(a), torch.tensor(b), align_corners=False, **kw)
        with pytest.raises(type(te.value)):
            EF.grid_sample(ember.tensor(a), ember.tensor(b), align_corners=False, **kw)


@pytest.mark.parametrize("shape,size", [((2, 2, 3), (2, 3, 4, 5)), ((2, 3, 4), (2, 3, 4, 5, 3)),
                                        ((1, 2, 3), (1, 1, 1, 6))])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.filterwarnings("ignore:Since version 1.3.0")
def test_affine_grid_matches_torch(shape, size, align_corners):
    _run(lambda th: TF.affine_grid(th, size, align_corners=align_corners),
         lambda th: EF.affine_grid(th, size, align_corners=align_corners), [RNG.standard_normal(shape)])


def test_affine_grid_unit_size_warns_as_torch():
    with pytest.warns(UserWarning, match="unit-size grids"):
        EF.affine_grid(ember.zeros(1, 2, 3, dtype=ember.float64), (1, 1, 1, 6), align_corners=True)


def test_affine_grid_errors_match_torch():
    for th, size in [(np.zeros((2, 2, 3)), (2, 3, 4)), (np.zeros((2, 3, 3)), (2, 3, 4, 5)),
                     (np.zeros((2, 2, 3)), (2, 3, 4, 5, 6)), (np.zeros((2, 2, 3)), (2, 3, 0, 5)),
                     (np.zeros((2, 2, 3), dtype=np.int64), (2, 3, 4, 5))]:
        with pytest.raises(Exception) as te:
            TF.affine_grid(torch.tensor(th), size, align_corners=False)
        with pytest.raises(type(te.value)):
            EF.affine_grid(ember.tensor(th), size, align_corners=False)


def test_spatial_transformer_round_trip_on_vdev():
    """affine_grid + grid_sample (the spatial-transformer pattern) on the primitives-only plugin."""
    pytest.importorskip("ember_vdev")
    th = ember.tensor(RNG.standard_normal((2, 2, 3)) * 0.3, requires_grad=True)
    x = ember.tensor(X4)
    out_c = EF.grid_sample(x, EF.affine_grid(th, (2, 3, 4, 4), align_corners=False), align_corners=False)
    out_c.sum().backward()
    thv = th.detach().to("vdev").requires_grad_()
    out_v = EF.grid_sample(x.to("vdev"), EF.affine_grid(thv, (2, 3, 4, 4), align_corners=False), align_corners=False)
    out_v.sum().backward()
    assert out_v.device.type == "vdev"
    np.testing.assert_allclose(out_v.cpu().detach().numpy(), out_c.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(thv.grad.cpu().numpy(), th.grad.numpy(), atol=1e-12)

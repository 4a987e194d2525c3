"""The remaining tensor operators (ember._more_ops) side by side with PyTorch 2.13: values, dtypes, shapes,
gradients and exception classes."""
import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def E(t):
    """ember tensor from a torch tensor (same values / dtype)."""
    return ember.from_numpy(t.detach().numpy().copy()) if t.dim() else ember.tensor(t.item(), dtype=_ed(t.dtype))


def _ed(d):
    return getattr(ember, str(d).split(".")[1])


def same(e, t, rtol=1e-6, atol=1e-6, dtype=True):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            same(a, b, rtol, atol, dtype)
        return
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    if dtype:
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1], (e.dtype, t.dtype)
    np.testing.assert_allclose(e.detach().numpy().astype(np.float64) if e.dtype != ember.bool else e.numpy(),
                               t.detach().numpy().astype(np.float64) if t.dtype != torch.bool else t.numpy(),
                               rtol=rtol, atol=atol, equal_nan=True)


def raises_same(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)):
        fe()


# ------------------------------------------------------------------ (a)
def test_bincount():
    x = torch.tensor([0, 3, 3, 1, 7])
    w = torch.tensor([0.5, 1.0, 2.0, 1.5, 1.0])
    same(ember.bincount(E(x)), torch.bincount(x))
    same(ember.bincount(E(x), minlength=10), torch.bincount(x, minlength=10))
    same(ember.bincount(E(x), E(w)), torch.bincount(x, w))
    same(E(x).bincount(E(w.double())), x.bincount(w.double()))
    same(ember.bincount(E(x[:0])), torch.bincount(x[:0]))
    raises_same(lambda: ember.bincount(E(-x)), lambda: torch.bincount(-x))
    raises_same(lambda: ember.bincount(E(x.float())), lambda: torch.bincount(x.float()))
    raises_same(lambda: ember.bincount(E(x.reshape(1, 5))), lambda: torch.bincount(x.reshape(1, 5)))


def test_histc_and_histogram():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, generator=g)
    same(ember.histc(E(x), bins=7), torch.histc(x, bins=7))
    same(ember.histc(E(x), bins=4, min=-1, max=1), torch.histc(x, bins=4, min=-1, max=1))
    same(E(x).histc(5, 0, 0), x.histc(5, 0, 0))
    same(ember.histc(E(torch.ones(3)), bins=3), torch.histc(torch.ones(3), bins=3))
    raises_same(lambda: ember.histc(E(x), bins=3, min=2, max=1), lambda: torch.histc(x, bins=3, min=2, max=1))
    raises_same(lambda: ember.histc(E(x.long())), lambda: torch.histc(x.long()))
    he, ee = ember.histogram(E(x), 6)
    ht, et = torch.histogram(x, 6)
    same(he, ht)
    same(ee, et, rtol=1e-5)
    edges = torch.tensor([-2.0, -0.5, 0.0, 0.3, 2.0])
    w = torch.rand(50, generator=g)
    same(ember.histogram(E(x), E(edges), weight=E(w)).hist, torch.histogram(x, edges, weight=w).hist, rtol=1e-5)
    same(ember.histogram(E(x), 5, range=(-1.0, 1.0), density=True)[0],
         torch.histogram(x, 5, range=(-1.0, 1.0), density=True)[0], rtol=1e-5)
    assert type(ember.histogram(E(x), 3)).__name__ == "histogram"


@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interp):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 7, generator=g, dtype=torch.float64)
    q = torch.tensor([0.0, 0.25, 0.5, 0.9, 1.0], dtype=torch.float64)
    same(ember.quantile(E(x), 0.3, interpolation=interp), torch.quantile(x, 0.3, interpolation=interp))
    same(ember.quantile(E(x), E(q), dim=1, interpolation=interp), torch.quantile(x, q, dim=1, interpolation=interp))
    same(ember.quantile(E(x), E(q), dim=0, keepdim=True, interpolation=interp),
         torch.quantile(x, q, dim=0, keepdim=True, interpolation=interp))
    same(E(x).quantile(0.5, dim=-1, keepdim=True), x.quantile(0.5, dim=-1, keepdim=True))
    same(ember.quantile(E(x), E(q), keepdim=True), torch.quantile(x, q, keepdim=True))
    xn = x.clone()
    xn[1, 2] = math.nan
    xn[3, :] = math.nan
    same(ember.quantile(E(xn), E(q), dim=1, interpolation=interp), torch.quantile(xn, q, dim=1,
                                                                                  interpolation=interp))
    same(ember.nanquantile(E(xn), E(q), dim=1, interpolation=interp),
         torch.nanquantile(xn, q, dim=1, interpolation=interp))
    same(ember.nanquantile(E(xn), 0.4, interpolation=interp), torch.nanquantile(xn, 0.4, interpolation=interp))
    s = torch.tensor(2.5, dtype=torch.float64)
    same(ember.quantile(E(s), 0.5, dim=0), torch.quantile(s, 0.5, dim=0))


def test_quantile_grad_and_errors():
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    xe = E(x).requires_grad_()
    torch.quantile(x, 0.3, dim=1).sum().backward()
    ember.quantile(xe, 0.3, dim=1).sum().backward()
    same(xe.grad, x.grad)
    xd = x.detach()
    raises_same(lambda: ember.quantile(E(xd), 1.5), lambda: torch.quantile(xd, 1.5))
    raises_same(lambda: ember.quantile(E(xd.long()), 0.5), lambda: torch.quantile(xd.long(), 0.5))
    raises_same(lambda: ember.quantile(E(xd), 0.5, interpolation="foo"),
                lambda: torch.quantile(xd, 0.5, interpolation="foo"))
    raises_same(lambda: ember.quantile(E(xd), E(torch.tensor([0.5]))),
                lambda: torch.quantile(xd, torch.tensor([0.5])))
    raises_same(lambda: ember.quantile(E(xd[:0]), 0.5), lambda: torch.quantile(xd[:0], 0.5))


def test_isin():
    a = torch.tensor([[1, 2, 3], [4, 5, 6]])
    b = torch.tensor([2, 6, 9, 2])
    same(ember.isin(E(a), E(b)), torch.isin(a, b))
    same(ember.isin(E(a), E(b), invert=True), torch.isin(a, b, invert=True))
    same(ember.isin(E(a), 5), torch.isin(a, 5))
    same(ember.isin(3, E(b)), torch.isin(3, b))
    same(ember.isin(E(a.float()), E(b)), torch.isin(a.float(), b))
    same(ember.isin(E(a), E(b[:0])), torch.isin(a, b[:0]))
    f = torch.tensor([math.nan, 1.0])
    same(ember.isin(E(f), E(f)), torch.isin(f, f))


def test_gcd_lcm():
    a = torch.tensor([0, 12, -18, 7, 0, 100])
    b = torch.tensor([0, 8, 24, -21, 5, 75])
    same(ember.gcd(E(a), E(b)), torch.gcd(a, b))
    same(ember.lcm(E(a), E(b)), torch.lcm(a, b))
    same(E(a).gcd(E(b[:1].expand(6))), a.gcd(b[:1].expand(6)))
    e = E(a.int())
    e.lcm_(E(b.int()))
    same(e, a.int().lcm(b.int()))
    raises_same(lambda: ember.gcd(E(a.float()), E(b.float())), lambda: torch.gcd(a.float(), b.float()))


def test_heaviside_nextafter_ldexp():
    x = torch.tensor([-1.5, 0.0, 2.0, math.nan, -0.0])
    v = torch.tensor([0.5])
    same(ember.heaviside(E(x), E(v)), torch.heaviside(x, v))
    raises_same(lambda: ember.heaviside(E(x), E(v.double())), lambda: torch.heaviside(x, v.double()))
    for dt in (torch.float32, torch.float64):
        a = torch.tensor([1.0, 0.0, -0.0, 1.0, -3.0, math.inf, 2.0, math.nan], dtype=dt)
        b = torch.tensor([2.0, 1.0, -1.0, 0.0, -math.inf, 0.0, 2.0, 1.0], dtype=dt)
        r = ember.nextafter(E(a), E(b))
        t = torch.nextafter(a, b)
        assert np.array_equal(r.numpy(), t.numpy(), equal_nan=True)
    raises_same(lambda: ember.nextafter(E(torch.tensor([1])), E(torch.tensor([2]))),
                lambda: torch.nextafter(torch.tensor([1]), torch.tensor([2])))
    m = torch.tensor([1.0, -3.5, 0.25])
    ex = torch.tensor([2, -1, 10])
    same(ember.ldexp(E(m), E(ex)), torch.ldexp(m, ex))
    same(E(m).ldexp(E(ex)), m.ldexp(ex))


@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16])
def test_frexp(dt):
    x = torch.tensor([0.0, -0.0, 1.0, 0.5, 3.0, -7.25, 1024.0, 1e-3, math.inf, -math.inf, math.nan, 6e-5], dtype=dt)
    me, ee = ember.frexp(E(x))
    mt, et = torch.frexp(x)
    same(me, mt, rtol=0, atol=0)
    same(ee, et, rtol=0, atol=0)
    assert E(x).frexp().mantissa.dtype == _ed(dt)
    raises_same(lambda: ember.frexp(E(x.long())), lambda: torch.frexp(torch.tensor([1, 2])))


def test_logaddexp_logcumsumexp():
    a = torch.tensor([-1000.0, 0.0, 3.0, -math.inf, math.inf, 1.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([-1000.0, 1.0, -2.0, -math.inf, math.inf, math.nan], dtype=torch.float64)
    same(ember.logaddexp(E(a), E(b)), torch.logaddexp(a, b))
    same(ember.logaddexp2(E(a), E(b)), torch.logaddexp2(a, b))
    i, j = torch.tensor([1, 2]), torch.tensor([3, 4])
    raises_same(lambda: ember.logaddexp(E(i), E(j)), lambda: torch.logaddexp(i, j))
    same(ember.logaddexp(E(a.detach()[1:3].float()), E(j)), torch.logaddexp(a.detach()[1:3].float(), j))
    x = torch.tensor([[-1000.0, 0.0, 5.0, -3.0, 2.0], [1.0, 2.0, 3.0, 4.0, 5.0]], dtype=torch.float64,
                     requires_grad=True)
    xe = E(x).requires_grad_()
    for d in (0, 1, -1):
        same(ember.logcumsumexp(xe, d), torch.logcumsumexp(x, d), rtol=1e-12)
    w = torch.randn(2, 5, dtype=torch.float64)
    (torch.logcumsumexp(x, 1) * w).sum().backward()
    (ember.logcumsumexp(xe, 1) * E(w)).sum().backward()
    same(xe.grad, x.grad, rtol=1e-10)
    same(E(x).logcumsumexp(0), x.logcumsumexp(0))
    same(ember.logcumsumexp(E(torch.zeros(0, 3)), 0), torch.logcumsumexp(torch.zeros(0, 3), 0))


def test_deg_rad():
    x = torch.tensor([0.0, 90.0, -180.0])
    same(ember.deg2rad(E(x)), torch.deg2rad(x))
    same(ember.rad2deg(E(x)), torch.rad2deg(x))
    same(ember.deg2rad(E(torch.tensor([180]))), torch.deg2rad(torch.tensor([180])))
    e = E(x)
    e.deg2rad_()
    same(e, x.clone().deg2rad_())
    raises_same(lambda: E(torch.tensor([1])).deg2rad_(), lambda: torch.tensor([1]).deg2rad_())


def test_trapezoid_family():
    y = torch.tensor([[1.0, 3.0, 2.0, 5.0], [0.0, 1.0, 4.0, 9.0]], requires_grad=True)
    x = torch.tensor([0.0, 0.5, 2.0, 3.0])
    ye = E(y).requires_grad_()
    same(ember.trapezoid(ye), torch.trapezoid(y))
    same(ember.trapezoid(ye, E(x)), torch.trapezoid(y, x))
    same(ember.trapezoid(ye, dx=0.5, dim=0), torch.trapezoid(y, dx=0.5, dim=0))
    same(ember.trapz(ye, E(x)), torch.trapz(y, x))
    same(ember.cumulative_trapezoid(ye, E(x)), torch.cumulative_trapezoid(y, x))
    same(ember.cumulative_trapezoid(ye, dx=2.0, dim=0), torch.cumulative_trapezoid(y, dx=2.0, dim=0))
    same(ember.trapezoid(E(torch.tensor([1, 2, 4]))), torch.trapezoid(torch.tensor([1, 2, 4])))
    torch.trapezoid(y, x).sum().backward()
    ember.trapezoid(ye, E(x)).sum().backward()
    same(ye.grad, y.grad)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    f = torch.tensor([[1.0, 2.0, 4.0, 8.0, 10.0], [3.0, 1.0, 0.0, -2.0, 7.0], [0.5, 0.5, 1.5, 2.5, 9.0]])
    same(ember.gradient(E(f), edge_order=edge_order), torch.gradient(f, edge_order=edge_order), rtol=1e-5)
    same(ember.gradient(E(f), spacing=2.0, dim=1, edge_order=edge_order),
         torch.gradient(f, spacing=2.0, dim=1, edge_order=edge_order), rtol=1e-5)
    c = torch.tensor([0.0, 1.0, 1.5, 3.5, 4.0])
    same(ember.gradient(E(f), spacing=[E(c)], dim=1, edge_order=edge_order),
         torch.gradient(f, spacing=[c], dim=1, edge_order=edge_order), rtol=1e-5)
    raises_same(lambda: ember.gradient(E(f[:, :1]), dim=1), lambda: torch.gradient(f[:, :1], dim=1))


def test_combinations_cartesian_tri_unravel():
    a = torch.tensor([1.0, 2.0, 3.0, 4.0])
    for r in (0, 1, 2, 3, 5):
        same(ember.combinations(E(a), r), torch.combinations(a, r))
        same(ember.combinations(E(a), r, with_replacement=True), torch.combinations(a, r, with_replacement=True))
    b = torch.tensor([5, 6])
    same(ember.cartesian_prod(E(a.long()), E(b)), torch.cartesian_prod(a.long(), b))
    same(ember.cartesian_prod(E(b)), torch.cartesian_prod(b))
    for args in ((3, 3), (4, 3, 1), (3, 5, -1), (0, 0)):
        same(ember.tril_indices(*args), torch.tril_indices(*args))
        same(ember.triu_indices(*args), torch.triu_indices(*args))
    same(ember.tril_indices(3, 3, dtype=ember.int32), torch.tril_indices(3, 3, dtype=torch.int32))
    idx = torch.tensor([[0, 5], [11, -1]])
    same(ember.unravel_index(E(idx), (3, 4)), torch.unravel_index(idx, (3, 4)))
    raises_same(lambda: ember.unravel_index(E(idx.float()), (3, 4)), lambda: torch.unravel_index(idx.float(), (3, 4)))
    same(ember.unravel_index(E(idx), (2, 2)), torch.unravel_index(idx, (2, 2)))   # not bounds-checked
    same(ember.unravel_index(E(torch.tensor(-7)), (2, 3)), torch.unravel_index(torch.tensor(-7), (2, 3)))
    raises_same(lambda: ember.unravel_index(E(idx), (2, -2)), lambda: torch.unravel_index(idx, (2, -2)))


# ------------------------------------------------------------------ (b)
def test_put_and_index_reduce():
    x = torch.arange(12.0).reshape(3, 4)
    idx = torch.tensor([0, 5, -1, 5])
    src = torch.tensor([10.0, 20.0, 30.0, 40.0])
    same(ember.put(E(x), E(idx), E(src), accumulate=True), torch.put(x, idx, src, accumulate=True))
    xt = x.t()
    et = E(x).t()
    et.put_(E(idx[:3]), E(src[:3]))
    same(et, xt.clone().put_(idx[:3], src[:3]))
    raises_same(lambda: E(x).put_(E(torch.tensor([12])), E(src[:1])), lambda: x.clone().put_(torch.tensor([12]),
                                                                                           src[:1]))
    s = torch.tensor([[2.0, 3.0, 4.0, 5.0], [1.0, 1.0, 9.0, -1.0]])
    ix = torch.tensor([2, 0])
    for red in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            same(ember.index_reduce(E(x), 0, E(ix), E(s), red, include_self=inc),
                 torch.index_reduce(x, 0, ix, s, red, include_self=inc))
    e = E(x)
    e.index_reduce_(1, E(torch.tensor([1, 1, 3])), E(torch.ones(3, 3) * 2), "prod")
    same(e, x.clone().index_reduce_(1, torch.tensor([1, 1, 3]), torch.ones(3, 3) * 2, "prod"))


def test_scatter_views():
    x = torch.zeros(3, 4, requires_grad=True)
    xe = E(x.detach()).requires_grad_()
    s = torch.ones(4, requires_grad=True)
    se = E(s.detach()).requires_grad_()
    r, re = torch.select_scatter(x, s, 0, 1), ember.select_scatter(xe, se, 0, 1)
    same(re, r)
    w = torch.arange(12.0).reshape(3, 4)
    (r * w).sum().backward()
    (re * E(w)).sum().backward()
    same(xe.grad, x.grad)
    same(se.grad, s.grad)
    z = torch.zeros(5, 4)
    same(ember.slice_scatter(E(z), E(torch.ones(2, 4)), 0, 1, 5, 2),
         torch.slice_scatter(z, torch.ones(2, 4), 0, 1, 5, 2))
    same(ember.slice_scatter(E(z), E(torch.ones(5, 2)), dim=1, start=2),
         torch.slice_scatter(z, torch.ones(5, 2), dim=1, start=2))
    same(ember.diagonal_scatter(E(z), E(torch.ones(3)), 1), torch.diagonal_scatter(z, torch.ones(3), 1))
    same(ember.as_strided_scatter(E(z), E(torch.ones(2, 2)), (2, 2), (1, 2), 1),
         torch.as_strided_scatter(z, torch.ones(2, 2), (2, 2), (1, 2), 1))
    raises_same(lambda: ember.select_scatter(E(z), E(torch.ones(3)), 0, 0),
                lambda: torch.select_scatter(z, torch.ones(3), 0, 0))


def test_split_fill_resize_sum_to_size():
    x = torch.arange(10.0).reshape(5, 2)
    same(ember.split_with_sizes(E(x), [2, 0, 3]), torch.split_with_sizes(x, [2, 0, 3]))
    same(E(x).split_with_sizes([1, 1], 1), x.split_with_sizes([1, 1], 1))
    raises_same(lambda: ember.split_with_sizes(E(x), [2, 2]), lambda: torch.split_with_sizes(x, [2, 2]))
    same(ember.fill(E(x), 3.5), torch.fill(x, 3.5))
    same(ember.fill(E(x.long()), E(torch.tensor(2.7))), torch.fill(x.long(), torch.tensor(2.7)))
    e = E(x)
    ember.zero_(e)
    same(e, torch.zero_(x.clone()))
    e = E(x)
    e.resize_(2, 3)
    same(e, x.clone().resize_(2, 3))
    e.resize_as_(E(torch.zeros(6)))
    assert tuple(e.shape) == (6,)
    y = torch.randn(2, 3, 4)
    same(E(y).sum_to_size(3, 1), y.sum_to_size(3, 1), rtol=1e-5)
    same(E(y).sum_to_size((1, 1, 4)), y.sum_to_size((1, 1, 4)), rtol=1e-5)
    raises_same(lambda: E(y).sum_to_size(2, 4), lambda: y.sum_to_size(2, 4))
    n = E(y).new_empty_strided((2, 3), (1, 2))
    assert tuple(n.shape) == (2, 3) and n.stride() == (1, 2) and n.dtype == ember.float32


def test_random_fills():
    ember.manual_seed(0)
    c = ember.empty(20000).cauchy_(1.0, 2.0)
    assert abs(float(c.median()) - 1.0) < 0.1
    g = ember.empty(20000).geometric_(0.25)
    assert float(g.min()) >= 1 and abs(float(g.mean()) - 4.0) < 0.15
    ln = ember.empty(20000, dtype=ember.float64).log_normal_(0.0, 0.5)
    assert abs(float(ln.log().mean())) < 0.02 and abs(float(ln.log().std()) - 0.5) < 0.02
    raises_same(lambda: ember.empty(3).geometric_(1.5), lambda: torch.empty(3).geometric_(1.5))


# ------------------------------------------------------------------ (c)
def test_copy_variants_are_copies():
    x = torch.arange(24.0).reshape(2, 3, 4)
    cases = [("view_copy", ((6, 4),)), ("permute_copy", ((2, 0, 1),)), ("diagonal_copy", (0, 1, 2)),
             ("expand_copy", ((3, 2, 3, 4),)), ("select_copy", (1, 2)), ("unsqueeze_copy", (1,)),
             ("transpose_copy", (0, 2)), ("unfold_copy", (2, 2, 1)), ("narrow_copy", (2, 1, 2)),
             ("slice_copy", (2, 1, 4, 2)), ("alias_copy", ()), ("detach_copy", ()),
             ("as_strided_copy", ((2, 2), (1, 2)))]
    for name, args in cases:
        r = getattr(ember, name)(E(x), *args)
        same(r, getattr(torch, name)(x, *args))
        assert r.is_contiguous()
        r.reshape(-1)[0] = -1.0          # a copy: the source is untouched
    same(ember.t_copy(E(x[0])), torch.t_copy(x[0]))
    same(ember.squeeze_copy(E(x[:1])), torch.squeeze_copy(x[:1]))
    same(ember.unbind_copy(E(x), 1), torch.unbind_copy(x, 1))
    same(ember.split_copy(E(x), 1, 2), torch.split_copy(x, 1, 2))
    same(ember.split_with_sizes_copy(E(x), [1, 2], 1), torch.split_with_sizes_copy(x, [1, 2], 1))
    out = ember.empty(0)
    ember.permute_copy(E(x), (2, 1, 0), out=out)
    same(out, torch.permute_copy(x, (2, 1, 0)))


def test_aliases():
    x = torch.tensor([-0.7, 0.2, 0.5])
    for name in ("arccosh", "arcsinh", "arctanh", "fix"):
        same(getattr(ember, name)(E(x + 2) if name == "arccosh" else E(x)),
             getattr(torch, name)(x + 2 if name == "arccosh" else x))
        same(getattr(E(x + 2) if name == "arccosh" else E(x), name)(),
             getattr(x + 2 if name == "arccosh" else x, name)())
    for name in ("abs_", "sin_", "fix_", "arcsin_", "negative_", "sqrt_", "clamp_min_"):
        args = (0.0,) if name == "clamp_min_" else ()
        e, t = E(x.abs()), x.abs().clone()
        getattr(ember, name)(e, *args)
        getattr(torch, name)(t, *args)
        same(e, t)
    for name, other in (("multiply_", 2.0), ("divide_", 4.0), ("subtract_", 1.0), ("greater_", 0.1),
                        ("less_equal_", 0.2), ("not_equal_", 0.5), ("arctan2_", 0.3)):
        e, t = E(x), x.clone()
        getattr(e, name)(other if name != "arctan2_" else E(torch.tensor(other)))
        getattr(t, name)(other if name != "arctan2_" else torch.tensor(other))
        same(e, t)
    e, t = E(x.double()), x.double()
    e.float_power_(2)
    t.float_power_(2)
    same(e, t)
    raises_same(lambda: E(x).float_power_(2), lambda: x.clone().float_power_(2))


def test_program_runs_unchanged_under_both():
    def program(T):
        a = T.arange(10.0)
        h = T.histc(a, bins=5, min=0, max=10)
        q = T.quantile(a, T.tensor([0.1, 0.9], dtype=a.dtype))
        g = T.gcd(T.tensor([12, 18]), T.tensor([8, 27]))
        lc = T.logcumsumexp(a, 0)[-1]
        c = T.combinations(T.tensor([1, 2, 3]))
        return [h, q, g, lc, c]
    for e, t in zip(program(ember), program(torch)):
        same(e, t, rtol=1e-5)


def test_small_conveniences():
    for x in (torch.tensor([1, 2, 3]), torch.tensor([0.5, -2.0]), torch.tensor([True, False])):
        same(ember.vander(E(x)), torch.vander(x))
        same(ember.vander(E(x), 4, increasing=True), torch.vander(x, 4, increasing=True))
        same(ember.vander(E(x), 0), torch.vander(x, 0))
    raises_same(lambda: ember.vander(E(torch.ones(2, 2))), lambda: torch.vander(torch.ones(2, 2)))
    raises_same(lambda: ember.vander(E(torch.ones(2)), -1), lambda: torch.vander(torch.ones(2), -1))
    m = torch.tensor([[1, 0], [0, 3]])
    for k in (0, 1, 4):
        same(ember.nonzero_static(E(m), size=k), torch.nonzero_static(m, size=k))
    same(ember.nonzero_static(E(m), size=3, fill_value=7), torch.nonzero_static(m, size=3, fill_value=7))
    assert ember.is_same_size(E(m), E(m.t())) and not ember.is_same_size(E(m), E(m[0]))
    assert ember.is_signed(E(m)) and not ember.is_signed(E(m.to(torch.uint8)))
    assert ember.is_nonzero(E(torch.tensor([2.0]))) is torch.is_nonzero(torch.tensor([2.0]))
    raises_same(lambda: ember.is_nonzero(E(m)), lambda: torch.is_nonzero(m))
    x = E(torch.ones(2)).requires_grad_()
    y = x * 2
    assert not ember.detach(y).requires_grad
    ember.detach_(y)
    assert not y.requires_grad


def test_fill_diagonal_renorm_():
    for shape, wrap in (((3, 3), False), ((7, 3), True), ((7, 3), False), ((3, 5), True), ((3, 3, 3), False),
                        ((0, 2), False)):
        t = torch.zeros(shape)
        e = E(t)
        e.fill_diagonal_(2.5, wrap)
        same(e, t.clone().fill_diagonal_(2.5, wrap))
    e = E(torch.zeros(4, 3)).t()
    e.fill_diagonal_(1.0)
    same(e, torch.zeros(4, 3).t().fill_diagonal_(1.0))
    raises_same(lambda: E(torch.zeros(2, 3, 3)).fill_diagonal_(1.0), lambda: torch.zeros(2, 3, 3).fill_diagonal_(1.0))
    raises_same(lambda: E(torch.zeros(3)).fill_diagonal_(1.0), lambda: torch.zeros(3).fill_diagonal_(1.0))
    x = torch.randn(3, 4)
    e = E(x)
    e.renorm_(2, 0, 1.0)
    same(e, x.clone().renorm_(2, 0, 1.0), rtol=1e-5)
    same(E(x).nonzero_static(size=2), x.nonzero_static(size=2))


def test_range_apply_map_addr_():
    with pytest.warns(UserWarning, match="deprecated"):
        r = ember.range(0, 3)
    same(r, torch.range(0, 3))
    with pytest.warns(UserWarning):
        same(ember.range(1, 2, 0.5), torch.range(1, 2, 0.5))
        same(ember.range(0, 3, dtype=ember.int64), torch.range(0, 3, dtype=torch.int64))
        raises_same(lambda: ember.range(0, 3, 0), lambda: torch.range(0, 3, 0))
    t = torch.tensor([[1, 2], [3, 4]])
    e = E(t)
    e.apply_(lambda v: v * 3 + 1)
    same(e, t.clone().apply_(lambda v: v * 3 + 1))
    tf = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    o = torch.tensor([10.0, 20.0])
    e = E(tf)
    e.map_(E(o), lambda a, b: a * b)
    same(e, tf.clone().map_(o, lambda a, b: a * b))
    e.map2_(E(o), E(tf), lambda a, b, c: a - b + c)
    same(e, tf.clone().map_(o, lambda a, b: a * b).map2_(o, tf, lambda a, b, c: a - b + c))
    raises_same(lambda: E(t).map_(E(o), lambda a, b: a), lambda: t.clone().map_(o, lambda a, b: a))
    m, v1, v2 = torch.randn(3, 2), torch.randn(3), torch.randn(2)
    e = E(m)
    e.addr_(E(v1), E(v2), alpha=2)
    same(e, m.clone().addr_(v1, v2, alpha=2), rtol=1e-5)
    x, mat, vec = torch.randn(3), torch.randn(3, 2), torch.randn(2)
    e = E(x)
    ember.addmv_(e, E(mat), E(vec))
    same(e, torch.addmv_(x.clone(), mat, vec), rtol=1e-5)


def test_histogramdd():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(40, 2, generator=g, dtype=torch.float64)
    w = torch.rand(40, generator=g, dtype=torch.float64)
    for kw in ({"bins": [3, 4]}, {"bins": 3, "range": [-1.0, 1.0, -2.0, 2.0], "density": True},
               {"bins": [torch.tensor([-3.0, 0.0, 3.0], dtype=torch.float64),
                         torch.tensor([-1.0, 0.5, 1.0, 2.0], dtype=torch.float64)], "weight": w}):
        ke = {k: ([E(b) if torch.is_tensor(b) else b for b in v] if isinstance(v, list) and k == "bins"
                  else E(v) if torch.is_tensor(v) else v) for k, v in kw.items()}
        he, ee = ember.histogramdd(E(x), **ke)
        ht, et = torch.histogramdd(x, **kw)
        same(he, ht, rtol=1e-10)
        same(list(ee), list(et), rtol=1e-10)
    same(ember.histogramdd(E(x.reshape(20, 2, 2)), bins=2).hist, torch.histogramdd(x.reshape(20, 2, 2), bins=2).hist)
    raises_same(lambda: ember.histogramdd(E(x[:, 0]), bins=2), lambda: torch.histogramdd(x[:, 0], bins=2))


def test_out_resize_warns_like_torch():
    x = torch.tensor([0.0, 90.0])
    o = ember.empty(5)
    with pytest.warns(UserWarning, match="resized"):
        ember.deg2rad(E(x), out=o)
    same(o, torch.deg2rad(x))
    raises_same(lambda: ember.deg2rad(E(x), out=ember.empty(2, dtype=ember.int64)),
                lambda: torch.deg2rad(x, out=torch.empty(2, dtype=torch.int64)))

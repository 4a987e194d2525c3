"""Complex numbers against torch, side by side: values, dtypes, shapes, views sharing storage, errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DEVICES = ["cpu", "vdev"]
RNG = np.random.default_rng(18)
ZN = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
XN = RNG.standard_normal((3, 4))


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return np.asarray(t.detach().cpu().tolist(), dtype=np.complex128 if t.is_complex() else None)


def _check(e, t, rtol=1e-6, atol=1e-6):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(e), _np(t), rtol=rtol, atol=atol)


def _pair(arr, dtype_name, device="cpu"):
    return (ember.tensor(arr, dtype=getattr(ember, dtype_name), device=device),
            torch.tensor(arr, dtype=getattr(torch, dtype_name)))


UNARY = {
    "conj": lambda m, z: m.conj(z),
    "conj_physical": lambda m, z: m.conj_physical(z),
    "real": lambda m, z: m.real(z),
    "imag": lambda m, z: m.imag(z),
    "view_as_real": lambda m, z: m.view_as_real(z),
    "angle": lambda m, z: m.angle(z),
    "abs": lambda m, z: m.abs(z),
    "resolve_conj": lambda m, z: m.resolve_conj(z),
    "resolve_neg": lambda m, z: m.resolve_neg(z),
    "method_conj": lambda m, z: z.conj(),
    "prop_real": lambda m, z: z.real,
    "prop_imag": lambda m, z: z.imag,
    "mT": lambda m, z: z.mT,
    "mH": lambda m, z: z.mH,
    "H": lambda m, z: z.H,
    "adjoint": lambda m, z: z.adjoint(),
    "transposed_real": lambda m, z: z.t().real,
    "sliced_imag": lambda m, z: z[1:, ::2].imag,
    "sgn": lambda m, z: m.sgn(z),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_complex(name, dtype, device):
    e, t = _pair(ZN, dtype, device)
    _check(UNARY[name](ember, e), UNARY[name](torch, t))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("name", ["conj", "conj_physical", "real", "angle", "resolve_conj", "method_conj"])
def test_unary_real_input(name, dtype):
    arr = (XN * 3).round() if dtype == "int64" else XN.copy()
    arr.flat[0] = 0
    e, t = _pair(arr, dtype)
    _check(UNARY[name](ember, e), UNARY[name](torch, t))


def test_angle_nan_and_signed_zero():
    arr = [float("nan"), -0.0, 0.0, -2.0, float("inf"), float("-inf")]
    e, t = _pair(arr, "float64")
    _check(ember.angle(e), torch.angle(t))


def test_conj_of_real_is_self_and_flags():
    e = ember.tensor([1.0, 2.0])
    assert ember.conj(e) is e and e.conj() is e and ember.real(e) is e
    z = ember.tensor([1 + 1j])
    assert not z.conj().is_conj() and not z.is_conj() and not z.is_neg()
    assert z.resolve_conj() is z and z.resolve_neg() is z


def test_conj_is_eager():
    """ember's conj is a copy (documented): writing it leaves the input alone; torch's lazy view would not."""
    z = ember.tensor([1 + 2j, 3 - 4j])
    c = z.conj()
    c.zero_()
    assert z.tolist() == [1 + 2j, 3 - 4j]


@pytest.mark.parametrize("device", DEVICES)
def test_real_imag_are_views_sharing_storage(device):
    e, t = _pair(ZN, "complex128", device)
    for m, z in ((ember, e), (torch, t)):
        z.real[0, 1] = 10.0
        z.imag[2] = -1.0
        z.imag[1, 1:3].mul_(3)
        m.view_as_real(z)[0, 0, 1] = 7.0
    _check(e, t)
    r = e.real
    assert r._base is e and r.stride() == tuple(t.real.stride()) and r.storage_offset() == t.real.storage_offset()
    i = e.t().imag
    assert i.stride() == tuple(t.t().imag.stride()) and i.storage_offset() == t.t().imag.storage_offset()
    v = ember.view_as_real(e[1:, 1:])
    tv = torch.view_as_real(t[1:, 1:])
    assert v.stride() == tuple(tv.stride()) and v.storage_offset() == tv.storage_offset()


def test_real_imag_setters():
    e, t = _pair(ZN, "complex64")
    for z in (e, t):
        z.real = z.imag * 2
        z.imag = 0.5
    _check(e, t)


def test_view_as_complex_shares_storage():
    arr = RNG.standard_normal((3, 2))
    e, t = _pair(arr, "float64")
    ce, ct = ember.view_as_complex(e), torch.view_as_complex(t)
    _check(ce, ct)
    ce[0] = 5 + 6j
    ct[0] = 5 + 6j
    _check(e, t)


def test_conj_physical_inplace():
    e, t = _pair(ZN, "complex128")
    assert e.conj_physical_() is e
    t.conj_physical_()
    _check(e, t)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_and_polar(dtype):
    a = RNG.standard_normal((3, 1))
    b = RNG.standard_normal((1, 4))
    (ea, ta), (eb, tb) = _pair(a, dtype), _pair(b, dtype)
    _check(ember.complex(ea, eb), torch.complex(ta, tb))
    _check(ember.polar(ea.abs(), eb), torch.polar(ta.abs(), tb))
    out_e = ember.empty(0, dtype=ember.complex64 if dtype == "float32" else ember.complex128)
    out_t = torch.empty(0, dtype=torch.complex64 if dtype == "float32" else torch.complex128)
    ember.complex(ea, eb, out=out_e)
    torch.complex(ta, tb, out=out_t)
    _check(out_e, out_t)


def _errors(fn_e, fn_t):
    with pytest.raises(Exception) as te:
        fn_t()
    with pytest.raises(type(te.value)) as ee:
        fn_e()
    return str(ee.value), str(te.value)


@pytest.mark.parametrize("case", [
    ("view_as_real real input", lambda m: m.view_as_real(m.ones(3))),
    ("view_as_complex last dim", lambda m: m.view_as_complex(m.ones(3, 3))),
    ("view_as_complex stride", lambda m: m.view_as_complex(m.ones(2, 3).t())),
    ("view_as_complex dtype", lambda m: m.view_as_complex(m.ones(3, 2, dtype=m.int32))),
    ("view_as_complex offset", lambda m: m.view_as_complex(m.ones(5)[1:].reshape(2, 2))),
    ("imag of real", lambda m: m.imag(m.ones(3))),
    ("complex dtype mismatch", lambda m: m.complex(m.ones(2), m.ones(2, dtype=m.float64))),
    ("complex int", lambda m: m.complex(m.ones(2, dtype=m.int32), m.ones(2, dtype=m.int32))),
    ("polar int", lambda m: m.polar(m.ones(2, dtype=m.int64), m.ones(2, dtype=m.int64))),
])
def test_errors_match_torch(case):
    name, fn = case
    me, mt = _errors(lambda: fn(ember), lambda: fn(torch))
    assert me == mt, name

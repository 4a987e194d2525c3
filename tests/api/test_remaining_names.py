"""The last names of torch, torch.Tensor, torch.nn.functional, torch.nn and torch.optim that ember lacked (issue 18),
checked side by side with PyTorch 2.13: values, shapes, dtypes, gradients and exception classes."""
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def _same(a, b, **kw):
    np.testing.assert_allclose(_np(a), _np(b), **kw)


def _raises_alike(fe, ft):
    """Both raise, with the same exception class; returns (ember's, torch's) messages."""
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(Exception) as ee:
        fe()
    assert type(ee.value).__name__ == type(te.value).__name__, (ee.value, te.value)
    return str(ee.value), str(te.value)


# ---------------------------------------------------------------- torch.*
def test_as_strided_in_place_and_its_errors():
    for mod in (ember, torch):
        a = mod.arange(6.)
        r = a.as_strided_((2, 2), (1, 2), 1)
        assert r is a
    _same(ember.arange(6.).as_strided_((2, 2), (1, 2), 1), torch.arange(6.).as_strided_((2, 2), (1, 2), 1))
    _same(ember.as_strided_(ember.arange(6.), (3,), (2,)), torch.as_strided_(torch.arange(6.), (3,), (2,)))
    e, t = _raises_alike(lambda: ember.arange(6.).as_strided_((2, 2), (1, 20), 1),
                         lambda: torch.arange(6.).as_strided_((2, 2), (1, 20), 1))
    assert e == t
    e, t = _raises_alike(lambda: ember.arange(6., requires_grad=True).as_strided_((2,), (1,)),
                         lambda: torch.arange(6., requires_grad=True).as_strided_((2,), (1,)))
    assert e == t


def test_slice_inverse_views_the_base_geometry():
    xe, xt = ember.arange(10.), torch.arange(10.)
    re, rt = ember.slice_inverse(xe[2:8:2], xe, 0, 2, 8, 2), torch.slice_inverse(xt[2:8:2], xt, 0, 2, 8, 2)
    _same(re, rt)
    assert re.storage_offset() == rt.storage_offset() and re.stride() == rt.stride()
    ze, zt = ember.zeros(20)[3:], torch.zeros(20)[3:]
    assert (ember.slice_inverse(ze, ember.arange(10.)[1:], 0, 0, 5, 1).storage_offset()
            == torch.slice_inverse(zt, torch.arange(10.)[1:], 0, 0, 5, 1).storage_offset())
    _raises_alike(lambda: ember.zeros(3).slice_inverse(ember.arange(10.)),
                  lambda: torch.zeros(3).slice_inverse(torch.arange(10.)))


@pytest.mark.parametrize("case", [
    dict(x=(1, 2, 7), w=(3, 2, 2), stride=[2], padding=[1], dilation=[1], transposed=False, op=[0], groups=1),
    dict(x=(2, 4, 6, 5), w=(4, 2, 3, 3), stride=[1, 2], padding=[1, 0], dilation=[1, 1], transposed=False,
         op=[0, 0], groups=2),
    dict(x=(1, 2, 4, 4), w=(2, 3, 2, 2), stride=[2, 2], padding=[0, 1], dilation=[1, 1], transposed=True,
         op=[1, 1], groups=1),
    dict(x=(1, 2, 3, 4, 4), w=(3, 2, 2, 2, 2), stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1],
         transposed=False, op=[0, 0, 0], groups=1),
])
def test_convolution_matches_torch(case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case["x"]).astype(np.float32)
    w = rng.standard_normal(case["w"]).astype(np.float32)
    bias_n = case["w"][1] * case["groups"] if case["transposed"] else case["w"][0]
    b = rng.standard_normal(bias_n).astype(np.float32)
    args = (case["stride"], case["padding"], case["dilation"], case["transposed"], case["op"], case["groups"])
    xe, we = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    re = ember.convolution(xe, we, ember.tensor(b), *args)
    rt = torch.convolution(xt, wt, torch.tensor(b), *args)
    _same(re, rt, rtol=1e-4, atol=1e-4)
    re.sum().backward()
    rt.sum().backward()
    _same(xe.grad, xt.grad, rtol=1e-4, atol=1e-4)
    _same(we.grad, wt.grad, rtol=1e-4, atol=1e-4)


def test_embedding_renorm_in_place():
    w = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32) * 2
    we, wt = ember.tensor(w), torch.tensor(w)
    re = ember.embedding_renorm_(we, ember.tensor([0, 1, 1]), 1.0, 2.0)
    torch.embedding_renorm_(wt, torch.tensor([0, 1, 1]), 1.0, 2.0)
    assert re is we
    _same(we, wt, rtol=1e-6)
    _raises_alike(lambda: ember.embedding_renorm_(ember.randn(5, 3), ember.tensor([0.]), 1.0, 2.0),
                  lambda: torch.embedding_renorm_(torch.randn(5, 3), torch.tensor([0.]), 1.0, 2.0))
    e, t = _raises_alike(lambda: ember.embedding_renorm_(ember.randn(5, 3), ember.tensor([7]), 1.0, 2.0),
                         lambda: torch.embedding_renorm_(torch.randn(5, 3), torch.tensor([7]), 1.0, 2.0))
    assert e == t
    _raises_alike(lambda: ember.embedding_renorm_(ember.randn(5, 3, requires_grad=True), ember.tensor([0]), 1., 2.),
                  lambda: torch.embedding_renorm_(torch.randn(5, 3, requires_grad=True), torch.tensor([0]), 1., 2.))


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("extra", [dict(), dict(include_last_offset=True), dict(padding_idx=2)])
def test_embedding_bag_aten_form(mode, extra):
    w = np.random.default_rng(2).standard_normal((10, 3)).astype(np.float32)
    idx = [1, 2, 4, 5, 4, 3, 2, 9]
    off = [0, 4, 4, 8] if extra.get("include_last_offset") else [0, 4, 4]
    args = (False, mode, False, None, extra.get("include_last_offset", False))
    pad = extra.get("padding_idx", None)
    te = ember.embedding_bag(ember.tensor(w), ember.tensor(idx), ember.tensor(off), *args, pad)
    if pad is None:
        tt = torch.embedding_bag(torch.tensor(w), torch.tensor(idx), torch.tensor(off), *args)
    else:
        tt = torch.embedding_bag(torch.tensor(w), torch.tensor(idx), torch.tensor(off), *args, pad)
    assert len(te) == len(tt) == 4
    _same(te[0], tt[0], rtol=1e-6)
    for a, b in zip(te[1:], tt[1:]):
        assert tuple(a.shape) == tuple(b.shape) and a.dtype == ember.int64
        assert a.tolist() == b.tolist()


def test_embedding_bag_sum_with_per_sample_weights_fills_offset2bag():
    w = np.random.default_rng(3).standard_normal((6, 2)).astype(np.float32)
    psw = np.array([0.5, 2.0, 1.0, -1.0], np.float32)
    te = ember.embedding_bag(ember.tensor(w), ember.tensor([0, 1, 2, 5]), ember.tensor([0, 2]), False, 0, False,
                             ember.tensor(psw))
    tt = torch.embedding_bag(torch.tensor(w), torch.tensor([0, 1, 2, 5]), torch.tensor([0, 2]), False, 0, False,
                             torch.tensor(psw))
    _same(te[0], tt[0], rtol=1e-6)
    assert te[1].tolist() == tt[1].tolist()


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax", "amin"])
@pytest.mark.parametrize("initial", [None, 10.0])
def test_segment_reduce_values_and_gradients(reduce, initial):
    data = np.array([[1., 2.], [3., 1.], [3., 5.], [0., 0.], [2., 2.]], np.float32)
    de, dt = ember.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    kw = {} if initial is None else dict(initial=initial)
    re = ember.segment_reduce(de, reduce, lengths=ember.tensor([2, 0, 3]), **kw)
    rt = torch.segment_reduce(dt, reduce, lengths=torch.tensor([2, 0, 3]), **kw)
    _same(re, rt, rtol=1e-6)
    assert re.dtype == ember.float32
    if initial is None:
        finite_e, finite_t = ember.nan_to_num(re, posinf=0., neginf=0., nan=0.), torch.nan_to_num(rt, 0., 0., 0.)
        finite_e.sum().backward()
        finite_t.sum().backward()
        _same(de.grad, dt.grad, rtol=1e-6)


def test_segment_reduce_offsets_axis_and_errors():
    data = np.arange(10, dtype=np.float32).reshape(2, 5)
    _same(ember.segment_reduce(ember.tensor(data.T.copy()), "sum", offsets=ember.tensor([0, 2, 2, 5])),
          torch.segment_reduce(torch.tensor(data.T.copy()), "sum", offsets=torch.tensor([0, 2, 2, 5])))
    lengths = [[2, 0, 3], [1, 1, 3]]
    _same(ember.segment_reduce(ember.tensor(data), "max", lengths=ember.tensor(lengths), axis=1),
          torch.segment_reduce(torch.tensor(data), "max", lengths=torch.tensor(lengths), axis=1))
    d = ember.tensor(data.T.copy())
    dt = torch.tensor(data.T.copy())
    for kw_e, kw_t in [(dict(lengths=ember.tensor([2, 2])), dict(lengths=torch.tensor([2, 2]))),
                       (dict(), dict()),
                       (dict(lengths=ember.tensor([6, -1])), dict(lengths=torch.tensor([6, -1]))),
                       (dict(lengths=ember.tensor([5]), axis=1), dict(lengths=torch.tensor([5]), axis=1))]:
        e, t = _raises_alike(lambda: ember.segment_reduce(d, "sum", **kw_e),
                             lambda: torch.segment_reduce(dt, "sum", **kw_t))
        assert e == t
    e, t = _raises_alike(lambda: ember.segment_reduce(d, "foo", lengths=ember.tensor([5])),
                         lambda: torch.segment_reduce(dt, "foo", lengths=torch.tensor([5])))
    assert e == t


@pytest.mark.parametrize("largest", [None, False])
def test_lobpcg_eigenpairs(largest):
    rng = np.random.default_rng(4)
    m = rng.standard_normal((20, 20))
    a = m @ m.T + np.eye(20)
    kw = {} if largest is None else dict(largest=largest)
    Ee, Xe = ember.lobpcg(ember.tensor(a), k=3, **kw)
    Et, Xt = torch.lobpcg(torch.tensor(a), k=3, **kw)
    assert Ee.shape == Et.shape and Xe.shape == Xt.shape and Ee.dtype == ember.float64
    _same(Ee, Et, rtol=1e-6)
    ae = ember.tensor(a)
    _same(ae @ Xe, Xe * Ee, atol=1e-5)                       # A x = lambda x, column by column
    Ee1, Xe1 = ember.lobpcg(ember.tensor(a))
    assert tuple(Ee1.shape) == (1,) and tuple(Xe1.shape) == (20, 1)
    e, t = _raises_alike(lambda: ember.lobpcg(ember.tensor(a), k=8), lambda: torch.lobpcg(torch.tensor(a), k=8))
    assert e == t
    _raises_alike(lambda: ember.lobpcg(ember.randn(3, 4)), lambda: torch.lobpcg(torch.randn(3, 4)))


def test_lobpcg_generalized_and_batched():
    rng = np.random.default_rng(5)
    m = rng.standard_normal((2, 18, 18))
    a = m @ m.transpose(0, 2, 1) + np.eye(18)
    b = np.diag(np.linspace(1., 2., 18))
    Ee, _ = ember.lobpcg(ember.tensor(a), k=2)
    Et, _ = torch.lobpcg(torch.tensor(a), k=2)
    _same(Ee, Et, rtol=1e-6)
    Ee, _ = ember.lobpcg(ember.tensor(a[0]), k=2, B=ember.tensor(b))
    Et, _ = torch.lobpcg(torch.tensor(a[0]), k=2, B=torch.tensor(b))
    _same(Ee, Et, rtol=1e-6)


def _quantized_or_skip():
    if not hasattr(ember, "quint8"):
        pytest.skip("ember-quantized is not installed")


@pytest.mark.parametrize("values", [[-1.0, 0.0, 1.0, 2.0], [0.5, 3.0], [-2.0, -1.0], [0.0, 0.0]])
@pytest.mark.parametrize("qdtype", ["quint8", "qint8"])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_quantize_per_tensor_dynamic(values, qdtype, reduce_range):
    _quantized_or_skip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qt = torch.quantize_per_tensor_dynamic(torch.tensor(values), getattr(torch, qdtype), reduce_range)
    qe = ember.quantize_per_tensor_dynamic(ember.tensor(values), getattr(ember, qdtype), reduce_range)
    assert qe.q_scale() == pytest.approx(qt.q_scale(), rel=1e-6)
    assert qe.q_zero_point() == qt.q_zero_point()
    assert qe.int_repr().tolist() == qt.int_repr().tolist()


def test_quantize_per_tensor_dynamic_refuses_qint32_and_empty_quantized():
    _quantized_or_skip()
    e, t = _raises_alike(lambda: ember.quantize_per_tensor_dynamic(ember.tensor([1.]), ember.qint32, False),
                         lambda: torch.quantize_per_tensor_dynamic(torch.tensor([1.]), torch.qint32, False))
    assert e == t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qt = torch.quantize_per_tensor(torch.randn(3), 0.1, 3, torch.quint8)
        et = torch.empty_quantized([2, 3], qt)
        qct = torch.quantize_per_channel(torch.randn(2, 3), torch.tensor([0.1, 0.2]), torch.tensor([1, 2]), 0,
                                         torch.qint8)
        ect = torch.empty_quantized([2, 5], qct)
    ee = ember.empty_quantized([2, 3], ember.quantize_per_tensor(ember.randn(3), 0.1, 3, ember.quint8))
    assert (ee.q_scale(), ee.q_zero_point(), tuple(ee.shape)) == (et.q_scale(), et.q_zero_point(), tuple(et.shape))
    assert ee.dtype == ember.quint8
    qce = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2]), ember.tensor([1, 2]), 0,
                                     ember.qint8)
    ece = ember.empty_quantized([2, 5], qce)
    _same(ece.q_per_channel_scales(), ect.q_per_channel_scales())
    assert ece.q_per_channel_zero_points().tolist() == ect.q_per_channel_zero_points().tolist()
    assert ece.q_per_channel_axis() == ect.q_per_channel_axis() and tuple(ece.shape) == (2, 5)
    _raises_alike(lambda: ember.empty_quantized([2], ember.randn(2)),
                  lambda: torch.empty_quantized([2], torch.randn(2)))


def test_fatal_error_is_an_exception_class():
    assert issubclass(ember.FatalError, Exception) and issubclass(torch.FatalError, Exception)
    with pytest.raises(ember.FatalError):
        raise ember.FatalError("x")


# ---------------------------------------------------------------- Tensor methods
def test_as_subclass_keeps_data_and_history():
    class MyE(ember.Tensor):
        pass

    class MyT(torch.Tensor):
        pass

    te, tt = ember.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    se, st = te.as_subclass(MyE), tt.as_subclass(MyT)
    assert type(se) is MyE and type(st) is MyT
    assert se.requires_grad == st.requires_grad and (se.grad_fn is None) == (st.grad_fn is None)
    (se * 3).sum().backward()
    (st * 3).sum().backward()
    _same(te.grad, tt.grad)
    assert type(ember.ones(2).as_subclass(ember.nn.Parameter)) is ember.nn.Parameter
    e, t = _raises_alike(lambda: te.as_subclass(int), lambda: tt.as_subclass(int))
    assert e == t


def test_module_load():
    for assign in (False, True):
        se, oe = ember.zeros(2), ember.ones(2)
        st, ot = torch.zeros(2), torch.ones(2)
        re, rt = se.module_load(oe, assign=assign), st.module_load(ot, assign=assign)
        _same(re, rt)
        _same(se, st)
        assert re is not se and re is not oe
    _raises_alike(lambda: ember.zeros(2).module_load(ember.ones(3)), lambda: torch.zeros(2).module_load(torch.ones(3)))


def test_reinforce_raises_pytorch_error():
    e, t = _raises_alike(lambda: ember.ones(3).reinforce(1), lambda: torch.ones(3).reinforce(1))
    assert e == t


def test_resize_and_resize_as_deprecated_forms():
    xe, xt = ember.arange(6., requires_grad=True), torch.arange(6., requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        re = xe.resize(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rt = xt.resize(2, 3)
        _same(re, rt)
        (re * ember.arange(6.).reshape(2, 3)).sum().backward()
        (rt * torch.arange(6.).reshape(2, 3)).sum().backward()
        _same(xe.grad, xt.grad)
        e, t = _raises_alike(lambda: ember.arange(6.).resize(2, 2), lambda: torch.arange(6.).resize(2, 2))
        assert e == t
        e, t = _raises_alike(lambda: ember.arange(6.).resize_as(ember.zeros(3)),
                             lambda: torch.arange(6.).resize_as(torch.zeros(3)))
        assert e == t
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert tuple(ember.arange(6.).resize_as(ember.zeros(3, 2)).shape) == (3, 2)


def test_set_from_tensor_storage_and_nothing():
    ce, ct = ember.arange(6.), torch.arange(6.)
    src_e, src_t = ember.arange(3.), torch.arange(3.)
    assert ce.set_(src_e) is ce
    ct.set_(src_t)
    _same(ce, ct)
    src_e[0] = 7.
    assert ce[0].item() == 7.                       # shares the storage
    se, st = ember.arange(6.).untyped_storage(), torch.arange(6.).untyped_storage()
    _same(ce.set_(se, 1, (2, 2), (1, 2)), ct.set_(st, 1, (2, 2), (1, 2)))
    _same(ce.set_(se), ct.set_(st))
    assert tuple(ce.set_().shape) == tuple(ct.set_().shape) == (0,)
    e, t = _raises_alike(lambda: ember.arange(6.).set_(ember.arange(3)), lambda: torch.arange(6.).set_(torch.arange(3)))
    assert e == t
    e, t = _raises_alike(lambda: ember.arange(6., requires_grad=True).set_(ember.arange(3.)),
                         lambda: torch.arange(6., requires_grad=True).set_(torch.arange(3.)))
    assert e == t
    _raises_alike(lambda: ember.arange(6.).set_(se, 0, (4, 4)), lambda: torch.arange(6.).set_(st, 0, (4, 4)))


def test_sparse_mask():
    if not hasattr(ember, "sparse_coo_tensor"):
        pytest.skip("ember-sparse is not installed")
    idx = [[1, 0], [0, 1]]
    me = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor([1., 2.]), (2, 3))
    mt = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor([1., 2.]), (2, 3))
    xe, xt = ember.arange(6.).reshape(2, 3).requires_grad_(), torch.arange(6.).reshape(2, 3).requires_grad_()
    re, rt = xe.sparse_mask(me), xt.sparse_mask(mt)
    assert re.is_sparse and re._indices().tolist() == rt._indices().tolist()
    _same(re._values(), rt._values())
    re.to_dense().sum().backward()
    rt.to_dense().sum().backward()
    _same(xe.grad, xt.grad)
    e, t = _raises_alike(lambda: ember.ones(2, 3).sparse_mask(ember.sparse_coo_tensor(ember.tensor([[0]]),
                                                                                      ember.tensor([1.]), (3,))),
                         lambda: torch.ones(2, 3).sparse_mask(torch.sparse_coo_tensor(torch.tensor([[0]]),
                                                                                      torch.tensor([1.]), (3,))))
    assert e == t
    _raises_alike(lambda: ember.ones(2, 3).sparse_mask(ember.ones(2, 3)),
                  lambda: torch.ones(2, 3).sparse_mask(torch.ones(2, 3)))


# ---------------------------------------------------------------- nn.functional
@pytest.mark.parametrize("form", ["3d3d", "2d3d", "3d2d", "2d2d"])
def test_grouped_mm_forms(form):
    rng = np.random.default_rng(6)
    shapes = {"3d3d": ((2, 8, 16), (2, 16, 8), None), "2d3d": ((24, 16), (2, 16, 8), [8, 16]),
              "3d2d": ((2, 8, 16), (16, 24), [8, 24]), "2d2d": ((8, 32), (32, 8), [16, 32])}[form]
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    offs = shapes[2]
    ae, be = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    re = ember.nn.functional.grouped_mm(ae, be, offs=None if offs is None else ember.tensor(offs, dtype=ember.int32))
    bt = torch.tensor(b)
    if form == "2d2d":
        bt = bt.t().contiguous().t()             # PyTorch's cpu kernel wants this layout
    rt = torch.nn.functional.grouped_mm(torch.tensor(a), bt,
                                        offs=None if offs is None else torch.tensor(offs, dtype=torch.int32))
    if form == "2d3d":                           # rows past the last offset: zero in ember, unset in PyTorch
        _same(re[:16], rt[:16], rtol=1e-4, atol=1e-4)
        assert float(re[16:].abs().sum()) == 0.0
    else:
        _same(re, rt, rtol=1e-4, atol=1e-4)
    re.sum().backward()
    assert ae.grad.shape == ae.shape and be.grad.shape == be.shape


def test_grouped_mm_errors():
    bf_e, bf_t = ember.bfloat16, torch.bfloat16
    F_e, F_t = ember.nn.functional, torch.nn.functional
    cases = [
        (lambda m: (m.randn(16), m.randn(2, 16, 8)), {}),
        (lambda m: (m.randn(2, 8, 16), m.randn(2, 32, 8)), {}),
        (lambda m: (m.randn(2, 8, 16), m.randn(3, 16, 8)), {}),
        (lambda m: (m.randn(24, 16), m.randn(2, 16, 8)), {}),
        (lambda m: (m.randn(2, 8, 16, dtype=m.float64), m.randn(2, 16, 8, dtype=m.float64)), {}),
    ]
    for make, kw in cases:
        e, t = _raises_alike(lambda: F_e.grouped_mm(*make(ember), **kw), lambda: F_t.grouped_mm(*make(torch), **kw))
        assert e == t
    e, t = _raises_alike(
        lambda: F_e.grouped_mm(ember.randn(24, 16, dtype=bf_e), ember.randn(2, 16, 8, dtype=bf_e),
                               offs=ember.tensor([8, 24])),
        lambda: F_t.grouped_mm(torch.randn(24, 16, dtype=bf_t), torch.randn(2, 16, 8, dtype=bf_t),
                               offs=torch.tensor([8, 24])))
    assert e == t
    e, t = _raises_alike(
        lambda: F_e.grouped_mm(ember.randn(2, 8, 16), ember.randn(2, 16, 8), bias=ember.randn(2, 8)),
        lambda: F_t.grouped_mm(torch.randn(2, 8, 16), torch.randn(2, 16, 8), bias=torch.randn(2, 8)))
    assert e == t


@pytest.mark.parametrize("case", ["plain", "bias_weight_smoothing", "unbatched", "kdim", "probs", "none"])
def test_linear_cross_entropy(case):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    tgt = rng.integers(0, 4, 6)
    kw_e, kw_t = {}, {}
    if case == "bias_weight_smoothing":
        bias, cw = rng.standard_normal(4).astype(np.float32), np.array([1., 2., .5, 1.], np.float32)
        kw_e = dict(linear_bias=ember.tensor(bias), weight=ember.tensor(cw), label_smoothing=0.1, ignore_index=2)
        kw_t = dict(linear_bias=torch.tensor(bias), weight=torch.tensor(cw), label_smoothing=0.1, ignore_index=2)
    elif case == "unbatched":
        x, tgt = x[0], tgt[0]
    elif case == "kdim":
        w = rng.standard_normal((4, 3, 5)).astype(np.float32)
        tgt = rng.integers(0, 4, (6, 3))
    elif case == "probs":
        tgt = rng.random((6, 4)).astype(np.float32)
        tgt /= tgt.sum(1, keepdims=True)
    elif case == "none":
        kw_e = kw_t = dict(reduction="none")
    xe, we = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    le = ember.nn.functional.linear_cross_entropy(xe, we, ember.tensor(tgt), **kw_e)
    lt = torch.nn.functional.linear_cross_entropy(xt, wt, torch.tensor(tgt), **kw_t)
    _same(le, lt, rtol=1e-5, atol=1e-6)
    le.sum().backward()
    lt.sum().backward()
    _same(xe.grad, xt.grad, rtol=1e-4, atol=1e-6)
    _same(we.grad, wt.grad, rtol=1e-4, atol=1e-6)


def test_linear_cross_entropy_options_and_errors():
    F_e, F_t = ember.nn.functional, torch.nn.functional
    x, w, tgt = np.ones((4, 3), np.float32), np.eye(5, 3, dtype=np.float32), np.array([0, 1, 2, 3])
    le = F_e.linear_cross_entropy(ember.tensor(x), ember.tensor(w), ember.tensor(tgt),
                                  options=ember.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    lt = F_t.linear_cross_entropy(torch.tensor(x), torch.tensor(w), torch.tensor(tgt),
                                  options=torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    _same(le, lt, rtol=1e-5)
    for bad in (dict(acc_policy="x"), dict(chunking_method="foo"), dict(batch_chunk_size=0),
                dict(chunking_method="aspect_ratio:0")):
        e, t = _raises_alike(lambda: ember.nn.LinearCrossEntropyOptions(**bad),
                             lambda: torch.nn.LinearCrossEntropyOptions(**bad))
        assert e == t
    _raises_alike(lambda: ember.nn.LinearCrossEntropyOptions(acc_dtype=ember.int32),
                  lambda: torch.nn.LinearCrossEntropyOptions(acc_dtype=torch.int32))
    for make in (lambda m: (m.ones(2, 2, 3), m.ones(5, 3), m.zeros(2, dtype=m.int64)),
                 lambda m: (m.ones(2, 3), m.ones(5), m.zeros(2, dtype=m.int64)),
                 lambda m: (m.ones(2, 4), m.ones(5, 3), m.zeros(2, dtype=m.int64)),
                 lambda m: (m.ones(3), m.ones(5, 2, 3), m.zeros(2, dtype=m.int64))):
        e, t = _raises_alike(lambda: F_e.linear_cross_entropy(*make(ember)),
                             lambda: F_t.linear_cross_entropy(*make(torch)))
        assert e == t
    e, t = _raises_alike(
        lambda: F_e.linear_cross_entropy(ember.ones(2, 3), ember.ones(5, 3), ember.ones(2, 5) / 5, ignore_index=1),
        lambda: F_t.linear_cross_entropy(torch.ones(2, 3), torch.ones(5, 3), torch.ones(2, 5) / 5, ignore_index=1))
    assert e == t


def test_boolean_dispatch_and_torch_function_helpers():
    for F in (ember.nn.functional, torch.nn.functional):
        def yes(x, flag=False):
            """doc"""
            return ("yes", x)

        def no(x, flag=False):
            return ("no", x)

        fn = F.boolean_dispatch("flag", 1, False, yes, no, "m", "f")
        assert fn(1) == ("no", 1) and fn(1, True) == ("yes", 1) and fn(1, flag=True) == ("yes", 1)
        assert fn.__doc__ == "doc" == no.__doc__ and fn.__name__ == "f" and fn.__module__ == "m"

    def d1():
        """a"""

    def d2():
        """b"""
    _raises_alike(lambda: ember.nn.functional.boolean_dispatch("f", 0, False, d1, d2, None, None),
                  lambda: torch.nn.functional.boolean_dispatch("f", 0, False, d1, d2, None, None))
    F = ember.nn.functional
    t = ember.ones(1)
    assert (F.has_torch_function((t,)), F.has_torch_function_unary(t), F.has_torch_function_variadic(t, 2)) == \
        (torch.nn.functional.has_torch_function((torch.ones(1),)), False, False) == (False, False, False)
    with pytest.raises(RuntimeError, match="__torch_function__"):
        F.handle_torch_function(F.relu, (t,), t)


# ---------------------------------------------------------------- nn
def test_linear_cross_entropy_loss_module():
    ember.manual_seed(0)
    me = ember.nn.LinearCrossEntropyLoss(5, 4, bias=True, out_features=(3,), label_smoothing=0.05)
    mt = torch.nn.LinearCrossEntropyLoss(5, 4, bias=True, out_features=(3,), label_smoothing=0.05)
    assert tuple(me.linear.weight.shape) == tuple(mt.linear.weight.shape) == (12, 5)
    with torch.no_grad():
        mt.linear.weight.copy_(torch.tensor(me.linear.weight.detach().numpy()))
        mt.linear.bias.copy_(torch.tensor(me.linear.bias.detach().numpy()))
    x = np.random.default_rng(8).standard_normal((6, 5)).astype(np.float32)
    tgt = np.random.default_rng(9).integers(0, 4, (6, 3))
    _same(me(ember.tensor(x), ember.tensor(tgt)), mt(torch.tensor(x), torch.tensor(tgt)), rtol=1e-5)
    e, t = _raises_alike(lambda: ember.nn.LinearCrossEntropyLoss(5, 4, weight=ember.ones(3)),
                         lambda: torch.nn.LinearCrossEntropyLoss(5, 4, weight=torch.ones(3)))
    assert e == t
    e, t = _raises_alike(lambda: ember.nn.LinearCrossEntropyLoss(5, 4, label_smoothing=2.0),
                         lambda: torch.nn.LinearCrossEntropyLoss(5, 4, label_smoothing=2.0))
    assert e == t


def test_sync_batch_norm_single_process_is_batch_norm():
    x = np.random.default_rng(10).standard_normal((4, 3, 5)).astype(np.float32)
    se, st = ember.nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm(3)
    out_e = se(ember.tensor(x))
    _same(out_e, st(torch.tensor(x)), rtol=1e-5, atol=1e-6)
    _same(out_e, ember.nn.BatchNorm1d(3)(ember.tensor(x)), rtol=1e-6)
    _same(se.running_mean, st.running_mean, rtol=1e-5)
    _same(se.running_var, st.running_var, rtol=1e-5)
    se.eval()
    st.eval()
    _same(se(ember.tensor(x)), st(torch.tensor(x)), rtol=1e-5, atol=1e-6)
    e, t = _raises_alike(lambda: se(ember.ones(4)), lambda: st(torch.ones(4)))
    assert e == t
    assert repr(se) == repr(st)


def test_convert_sync_batchnorm():
    net_e = ember.nn.Sequential(ember.nn.Conv2d(2, 3, 1), ember.nn.BatchNorm2d(3),
                                ember.nn.Sequential(ember.nn.BatchNorm1d(4)))
    net_e[1].running_mean.fill_(0.5)
    net_e[1].eval()
    weight = net_e[1].weight
    out = ember.nn.SyncBatchNorm.convert_sync_batchnorm(net_e)
    assert type(out[1]) is ember.nn.SyncBatchNorm and type(out[2][0]) is ember.nn.SyncBatchNorm
    assert out[1].weight is weight                          # the parameters are moved over, as PyTorch's
    assert float(out[1].running_mean[0]) == 0.5 and out[1].training is False
    net_t = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3))
    assert [type(m).__name__ for m in torch.nn.SyncBatchNorm.convert_sync_batchnorm(net_t).modules()] == \
        [type(m).__name__ for m in ember.nn.SyncBatchNorm.convert_sync_batchnorm(
            ember.nn.Sequential(ember.nn.Conv2d(2, 3, 1), ember.nn.BatchNorm2d(3))).modules()]


def test_container_and_factory_kwargs():
    with pytest.warns(FutureWarning, match="nn.Container` is deprecated"):
        c = ember.nn.Container(a=ember.nn.Linear(2, 2))
    assert [n for n, _ in c.named_children()] == ["a"]
    kw = dict(device="cpu", dtype=ember.float64, factory_kwargs={"memory_format": None})
    assert ember.nn.factory_kwargs(kw) == dict(device="cpu", dtype=ember.float64, memory_format=None)
    assert ember.nn.factory_kwargs(None) == {} == torch.nn.factory_kwargs(None)
    for bad in (dict(foo=1), dict(dtype=1, factory_kwargs={"dtype": 2})):
        e, t = _raises_alike(lambda: ember.nn.factory_kwargs(bad), lambda: torch.nn.factory_kwargs(bad))
        assert e == t


# ---------------------------------------------------------------- optim
def _adam_pair(mod):
    lin = mod.nn.Linear(3, 2)
    with mod.no_grad():
        lin.weight.copy_(mod.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
        lin.bias.copy_(mod.tensor([0.01, -0.02]))
    opt = mod.optim.Adam(lin.parameters(), lr=0.1)
    lin(mod.ones(4, 3)).sum().backward()
    opt.step()
    return lin, opt


def test_swap_in_optimizer_params_and_state():
    results = []
    for mod in (ember, torch):
        lin, opt = _adam_pair(mod)
        live_params = [p.detach().clone() for p in lin.parameters()]
        sd = opt.state_dict()
        swap_sd = {"state": {k: {n: v.clone() for n, v in s.items()} for k, s in sd["state"].items()},
                   "param_groups": [dict(g, lr=0.5) for g in sd["param_groups"]]}
        others = {n: p.detach().clone().requires_grad_() for n, p in lin.named_parameters()}
        for p in others.values():
            p.grad = mod.ones_like(p)
        with mod.optim.swap_in_optimizer_params_and_state(opt, others, swap_sd):
            assert opt.param_groups[0]["lr"] == 0.5
            opt.step()
        assert opt.param_groups[0]["lr"] == 0.1
        for p, q in zip(lin.parameters(), live_params):        # the live parameters are untouched
            assert np.array_equal(_np(p), _np(q))
        results.append(([_np(p) for p in others.values()], _np(swap_sd["state"][0]["exp_avg"]),
                         float(swap_sd["state"][0]["step"])))
    (pe, ae, se), (pt, at, st) = results
    for a, b in zip(pe, pt):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ae, at, rtol=1e-5, atol=1e-6)
    assert se == st == 2.0


def test_swap_in_optimizer_refusals():
    for mod in (ember, torch):
        lin = mod.nn.Linear(2, 2)
        opt = mod.optim.SGD(lin.parameters(), lr=0.1)
        with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
            with mod.optim.swap_in_optimizer_params_and_state(opt, {}, {}):
                pass
    msgs = []
    for mod in (ember, torch):
        lin, opt = _adam_pair(mod)
        sd = opt.state_dict()
        bad = {"state": sd["state"], "param_groups": [dict(sd["param_groups"][0], extra=1)]}
        with pytest.raises(RuntimeError) as exc:
            with mod.optim.swap_in_optimizer_params_and_state(opt, dict(lin.named_parameters()), bad):
                pass
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1]


def test_sync_batch_norm_refuses_a_multi_process_group(monkeypatch):
    import ember.distributed as dist
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    m = ember.nn.SyncBatchNorm(3)
    with pytest.raises(RuntimeError, match="not implemented in ember"):
        m(ember.randn(4, 3))
    m.eval()                                              # eval uses the running statistics: nothing to sync
    assert tuple(m(ember.randn(4, 3)).shape) == (4, 3)


def test_lobpcg_sparse_input():
    if not hasattr(ember, "sparse_coo_tensor"):
        pytest.skip("ember-sparse is not installed")
    a = np.diag(np.arange(1., 13.))
    E, _ = ember.lobpcg(ember.tensor(a).to_sparse(), k=2)
    Et, _ = torch.lobpcg(torch.tensor(a).to_sparse(), k=2)
    _same(E, Et, rtol=1e-6)

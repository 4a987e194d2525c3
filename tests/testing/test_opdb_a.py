"""The first half of the op database (elementwise, compare, copy, creation, random) on cpu:
every entry yields samples for each supported dtype, the cpu result matches ``ref`` (or
passes ``check``), and every error input raises as declared."""
import re
import warnings

import pytest

import ember
from ember.testing import opdb
from ember.testing.opdb import _common, compare, copy, creation, elementwise, random as random_db
from ember.testing._samples import ALL_DTYPES

MODULES = (elementwise, compare, copy, creation, random_db)
ENTRIES = [e for m in MODULES for e in m.op_db]
IDS = [e.id for e in ENTRIES]


def _dtypes(info):
    return info.supported_dtypes("cpu", ALL_DTYPES)


def test_entries_unique_and_named_after_declared_ops():
    assert len(set(IDS)) == len(IDS), [i for i in IDS if IDS.count(i) > 1]
    declared = set(ember._dispatch.ops)
    assert not [e.name for e in ENTRIES if e.name not in declared]


def test_my_categories_cover_their_declared_ops():
    mine = set()
    for n, o in ember._dispatch.ops.items():
        mod = getattr(o.meta, "__module__", "")
        if mod.endswith(("_compare", "_copy", "_creation", "_random")) or n in vars(ember._ops._elementwise) \
                or n in {name for name, *_ in ember._ops._elementwise.UNARY + ember._ops._elementwise.BINARY}:
            mine.add(n)
    mine |= {"div_trunc", "pow", "round", "nan_to_num", "where", "clamp", "lerp", "addcmul", "addcdiv"}
    have = {e.name for e in ENTRIES}
    assert sorted(mine - have) == []


def test_op_db_collects_core_entries_and_lookups():
    db = opdb.op_db()
    ids = {e.id for e in db}
    assert set(IDS) <= ids
    assert opdb.opinfo("add").name == "add"
    assert opdb.opinfo("add.alpha").variant == "alpha"
    with pytest.raises(KeyError, match="no OpInfo"):
        opdb.opinfo("no_such_op")
    missing = opdb.missing_ops()
    assert "add" not in missing and "uniform" not in missing
    assert set(missing) <= set(ember._dispatch.ops)


def _run(info, sample):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return info.op(sample.input, *sample.args, **sample.kwargs)


def _check_entry(info):
    n = 0
    for dt_name in _dtypes(info):
        dtype = getattr(ember, dt_name)
        samples = info.samples("cpu", dtype)
        assert samples, f"{info.id}: no samples for {dt_name}"
        assert len(samples) <= 16, f"{info.id}: {len(samples)} samples for {dt_name} (keep it small)"
        for s in samples:
            try:
                result = _run(info, s)
            except Exception as e:
                raise AssertionError(f"{info.id} {dt_name} {s!r} raised {type(e).__name__}: {e}") from e
            if s.output_process is not None:
                result = s.output_process(result)
            if info.check is not None:
                info.check(s, result, None)
            else:
                assert info.ref is not None, f"{info.id}: neither ref nor check"
                expected = _common.call_ref(info, s)
                rd = (result[0] if isinstance(result, (tuple, list)) else result).dtype.name
                rtol, atol = info.tolerance(rd)
                _common.assert_close(result, expected, rtol, atol, msg=f"{info.id} {dt_name} {s!r}")
            n += 1
    return n


@pytest.mark.parametrize("info", ENTRIES, ids=IDS)
def test_samples_match_reference_on_cpu(info):
    assert _dtypes(info), f"{info.id} supports no dtype on cpu"
    assert _check_entry(info) > 0


@pytest.mark.parametrize("info", [e for e in ENTRIES if e.error_inputs is not None],
                         ids=[e.id for e in ENTRIES if e.error_inputs is not None])
def test_error_inputs_raise_as_declared(info):
    errs = info.errors("cpu")
    assert errs
    for ei in errs:
        s = ei.sample
        with pytest.raises(ei.error_type) as exc:
            _run(info, s)
        assert re.search(ei.error_regex, str(exc.value)), \
            f"{info.id} {s!r}: message {str(exc.value)!r} does not match {ei.error_regex!r}"


def test_error_inputs_match_pytorch_where_installed():
    """The declared exception classes and messages are PyTorch's (checked against torch, when present)."""
    torch = pytest.importorskip("torch")
    from ember.testing.opdb._common import to_numpy
    checked = 0
    for info in ENTRIES:
        tfn = _torch_fn(torch, info)
        if tfn is None or info.error_inputs is None:
            continue
        for ei in info.errors("cpu"):
            s = ei.sample
            conv = lambda x: torch.from_numpy(to_numpy(x)).to(getattr(torch, x.dtype.name)) \
                if isinstance(x, ember.Tensor) else x
            with pytest.raises(ei.error_type) as exc:
                tfn(conv(s.input), *[conv(a) for a in s.args], **{k: conv(v) for k, v in s.kwargs.items()})
            assert re.search(ei.error_regex, str(exc.value).replace("torch.", "ember.")), \
                f"{info.id} {s!r}: torch says {str(exc.value)!r}, not {ei.error_regex!r}"
            checked += 1
    assert checked > 20


_TORCH_NAMES = {"div_trunc": lambda t: (lambda a, b: t.div(a, b, rounding_mode="trunc"))}


def _torch_fn(torch, info):
    if info.variant or info.name in ("copy_", "fill_", "arange", "linspace", "eye") or info.check is not None:
        return None
    if info.name in _TORCH_NAMES:
        return _TORCH_NAMES[info.name](torch)
    return getattr(torch, info.name, None)


def _to_torch(torch, x):
    from ember.testing.opdb._common import to_numpy
    if isinstance(x, ember.Tensor):
        return torch.from_numpy(to_numpy(x)).to(getattr(torch, x.dtype.name))
    if isinstance(x, ember.dtype):
        return getattr(torch, x.name)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(torch, v) for v in x)
    return x


_TORCH_CALLS = {
    "copy_": lambda t: (lambda d, s, nb=False: d.clone().copy_(s)),
    "fill_": lambda t: (lambda d, v: d.clone().fill_(v)),
    "div_trunc": lambda t: (lambda a, b: t.div(a, b, rounding_mode="trunc")),
    "linspace.logspace": lambda t: t.logspace,
}


@pytest.mark.parametrize("info", [e for e in ENTRIES if e.check is None], ids=[e.id for e in ENTRIES if e.check is None])
def test_cpu_results_match_pytorch_where_installed(info):
    """ember's cpu results have PyTorch's values and dtypes on every sample (when torch is present):
    this keeps both the references and the kernels honest."""
    torch = pytest.importorskip("torch")
    fn = _TORCH_CALLS.get(info.id) or _TORCH_CALLS.get(info.name)
    fn = fn(torch) if fn else getattr(torch, info.name.split(".")[0], None)
    if fn is None:
        pytest.skip(f"torch has no {info.name}")
    kw_drop = ("device",)
    for dt_name in _dtypes(info):
        for s in info.samples("cpu", getattr(ember, dt_name)):
            ours = _run(info, s)
            kw = {k: _to_torch(torch, v) for k, v in s.kwargs.items() if k not in kw_drop}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = fn(_to_torch(torch, s.input), *[_to_torch(torch, a) for a in s.args], **kw)
            if info.name == "isclose" and theirs.dtype != torch.bool:
                continue
            assert str(theirs.dtype).replace("torch.", "") == ours.dtype.name, \
                f"{info.id} {dt_name} {s!r}: dtype {ours.dtype.name}, torch gives {theirs.dtype}"
            exp = theirs.float() if theirs.dtype == torch.bfloat16 else theirs
            rtol, atol = info.tolerance(ours.dtype.name)
            _common.assert_close(ours, exp.numpy(), rtol, atol, msg=f"{info.id} {dt_name} {s!r} vs torch")

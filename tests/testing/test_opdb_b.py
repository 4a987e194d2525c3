"""The second half of the op database (reduction, linalg, shape, indexing, nn) run on cpu:
every entry yields samples for each dtype it declares, the cpu result matches its numpy
reference (values, shapes and dtypes; exactly for integer / bool / index results), and every
error input raises the declared exception with a matching message."""
import importlib
import re
import warnings

import numpy as np
import pytest

import ember
from ember.testing import OpInfo

MODULES = ("reduction", "linalg", "shape", "indexing", "nn")
ALL = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
       "complex64", "complex128")


#: kernel bugs reported to the lead: (entry id, sample name) -> (dtypes, reason). Such a sample
#: must still fail (so a fix is noticed and the line removed); every other sample must pass.
KNOWN_BUGS = {
    ("einsum", "diagonal"): (("uint8", "int8", "int16", "int32"),
                             "einsum('ii->i') of an integer tensor gives int64; PyTorch keeps the dtype (only a "
                             "single-operand contraction that sums a label is a sum -> int64)"),
}


def _entries():
    out = []
    for m in MODULES:
        try:
            mod = importlib.import_module(f"ember.testing.opdb.{m}")
        except ModuleNotFoundError as e:
            if e.name == f"ember.testing.opdb.{m}":
                continue
            raise
        out.extend(mod.OPINFOS)
    return out


ENTRIES = _entries()


def _np(x):
    if isinstance(x, ember.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, list):
        return [_np(v) for v in x]
    if isinstance(x, tuple):
        return tuple(_np(v) for v in x)
    return x


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [v for x in r for v in _flat(x)]
    return [r]


def _close(actual, expected, rtol, atol, exact, where):
    a = np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"{where}: shape {a.shape} != reference {e.shape}"
    assert a.dtype == e.dtype, f"{where}: dtype {a.dtype} != reference {e.dtype}"
    flt = a.dtype.kind in "fc" or a.dtype.name == "bfloat16"
    if not flt:
        bad = a != e
    else:
        a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        e64 = e.astype(np.complex128 if e.dtype.kind == "c" else np.float64)
        both_nan = (np.isnan(a64) & np.isnan(e64))
        if exact:
            rtol, atol = 0.0, 0.0
        with np.errstate(invalid="ignore"):
            bad = ~((np.abs(a64 - e64) <= atol + rtol * np.abs(e64)) | (a64 == e64) |
                    both_nan)
    if bad.any():
        idx = list(zip(*np.nonzero(bad)))[:5] if a.ndim else [()]
        det = ", ".join(f"{tuple(int(j) for j in i)}: {a[i]} vs {e[i]}" for i in idx)
        raise AssertionError(f"{where}: {int(bad.sum())} mismatching element(s); first: {det}")


def _ids(e):
    return e.id


def test_database_names_declared_ops():
    from ember import _dispatch
    names = {e.name for e in ENTRIES}
    assert names <= set(_dispatch.ops), sorted(names - set(_dispatch.ops))
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids)
def test_samples_match_reference(entry: OpInfo):
    dtypes = entry.supported_dtypes("cpu", ALL)
    assert dtypes, f"{entry.id}: no dtype"
    for dt in dtypes:
        dtype = getattr(ember, dt)
        samples = entry.samples("cpu", dtype)
        assert samples, f"{entry.id}: no sample for {dt}"
        for s in samples:
            where = f"{entry.id} {dt} {s!r}"
            bug = KNOWN_BUGS.get((entry.id, s.name))
            if bug is not None and dt in bug[0]:
                with pytest.raises(AssertionError):
                    _check_sample(entry, dt, s, where)
                continue
            _check_sample(entry, dt, s, where)


def _check_sample(entry, dt, s, where):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = entry.op(s.input, *s.args, **s.kwargs)
        except Exception as ex:
            raise AssertionError(f"{where}: raised {type(ex).__name__}: {ex}") from ex
        if entry.ref is None:
            return
        exp = entry.ref(_np(s.input), *_np(s.args), **{k: _np(v) for k, v in s.kwargs.items()})
    if s.output_process is not None:
        res, exp = s.output_process(res), s.output_process(exp)
    got, want = _flat(_np(res)), _flat(exp)
    assert len(got) == len(want), f"{where}: {len(got)} outputs vs {len(want)} in the reference"
    for i, (g, w) in enumerate(zip(got, want)):
        rtol, atol = entry.tolerance(np.asarray(g).dtype.name)   # per result dtype
        _close(g, w, rtol, atol, entry.exact, f"{where} output {i}")


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.error_inputs is not None], ids=_ids)
def test_error_inputs(entry: OpInfo):
    errs = entry.errors("cpu")
    assert errs
    for ei in errs:
        s = ei.sample
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ei.error_type) as info:
                entry.op(s.input, *s.args, **s.kwargs)
        assert re.search(ei.error_regex, str(info.value)), \
            f"{entry.id} {s!r}: message {str(info.value)!r} does not match {ei.error_regex!r}"


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.supports_out], ids=_ids)
def test_out(entry: OpInfo):
    """``out=`` gives the same result, written into the given tensor(s)."""
    dt = "float32" if "float32" in entry.supported_dtypes("cpu", ALL) else entry.supported_dtypes("cpu", ALL)[0]
    for s in entry.samples("cpu", getattr(ember, dt))[:3]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = entry.op(s.input, *s.args, **s.kwargs)
            if isinstance(res, ember.Tensor):
                out = ember.empty((0,), dtype=res.dtype)
                r2 = entry.op(s.input, *s.args, out=out, **s.kwargs)
                assert r2 is out
                got, want = [out], [res]
            else:
                outs = tuple(ember.empty((0,), dtype=r.dtype) for r in res)
                entry.op(s.input, *s.args, out=outs, **s.kwargs)
                got, want = list(outs), list(res)
        for g, w in zip(got, want):
            _close(_np(g), _np(w), 0, 0, False, f"{entry.id} out= {s!r}")


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.inplace is not None], ids=_ids)
def test_inplace(entry: OpInfo):
    """The in-place variant writes the out-of-place result into its input (where dtypes agree)."""
    n = 0
    for dt in ("float32", "int64"):
        if dt not in entry.supported_dtypes("cpu", ALL):
            continue
        for s in entry.samples("cpu", getattr(ember, dt)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = entry.op(s.input, *s.args, **s.kwargs)
                if not isinstance(res, ember.Tensor) or res.dtype != s.input.dtype or res.shape != s.input.shape:
                    continue
                x = s.input.clone()
                r2 = entry.inplace(x, *s.args, **s.kwargs)
            assert r2 is x
            _close(_np(x), _np(res), 0, 0, False, f"{entry.id} inplace {s!r}")
            n += 1
    assert n


#: (entry id, sample name) -> reason: samples whose backward raises, as PyTorch's does
KNOWN_GRAD_BUGS = {}


def _grad_inputs(s):
    found = []
    for x in [s.input, *s.args, *s.kwargs.values()]:
        xs = x if isinstance(x, (list, tuple)) else [x]
        found += [t for t in xs if isinstance(t, ember.Tensor) and t.requires_grad]
    return found


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.supports_autograd], ids=_ids)
def test_gradcheck_float64(entry: OpInfo):
    """Every differentiable entry has float64 samples that require grad, and their gradients
    match finite differences (outputs that are not floating, e.g. indices, are dropped)."""
    from ember.autograd import gradcheck
    assert "float64" in entry.supported_dtypes("cpu", ALL)
    n = 0
    for s in entry.samples("cpu", ember.float64, requires_grad=True):
        ins = _grad_inputs(s)
        if not ins:
            continue

        def f(*_, s=s):
            r = entry.op(s.input, *s.args, **s.kwargs)
            if s.output_process is not None:
                r = s.output_process(r)
            return tuple(x for x in r if x.dtype.is_floating_point) if isinstance(r, tuple) else r
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if (entry.id, s.name) in KNOWN_GRAD_BUGS:
                with pytest.raises(Exception):
                    gradcheck(f, tuple(ins), eps=1e-6, atol=1e-5, rtol=1e-3)
                continue
            try:
                gradcheck(f, tuple(ins), eps=1e-6, atol=1e-5, rtol=1e-3)
            except Exception as ex:
                raise AssertionError(f"{entry.id} {s!r}: {type(ex).__name__}: {str(ex)[:600]}") from ex
        n += 1
    assert n, f"{entry.id}: no float64 sample requires grad"

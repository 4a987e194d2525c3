"""The conformance checks themselves, independent of pytest.

The pytest plugin (``ember.testing.conformance.plugin``) and ``ember conformance`` both run
these functions, so the two ways of running the suite check exactly the same things.

Per op, ``samples``: its samples (every dtype tested, and the gradient samples) build; an error
raised while building them is reported once, here, with the frame that raised it, and the op's
per-sample checks of the dtypes concerned do not run (their matrix cells show the failure).

Tests per (OpInfo, dtype, sample) on the device under test:

- ``op``:      the result matches the reference: on cpu the numpy ``ref`` (or the OpInfo's
               ``check``); on another device the same sample run on cpu (inputs moved with
               ``.to``) and ``ref`` too. Output device, dtype and shape as on cpu.
- ``out``:     (``supports_out``) ``op(..., out=t)`` writes the same values into ``t`` and returns it.
- ``inplace``: (``inplace``) the in-place variant gives the functional result, in the input.
- ``view``:    (``is_view``) the result shares the input's storage, and writes go through.
Per op: ``errors`` (every ErrorInput raises the declared class with a matching message) and
``grad`` (gradcheck on a few samples; float64 where the device has it, else float32 with loose
tolerances).
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import fnmatch
import itertools
import re
import traceback
import warnings

import numpy as np

from .._opinfo import MissingDtype

__all__ = ["TESTS", "Target", "Case", "ConformanceFailure", "NotApplicable", "SampleBuildError", "make_target",
           "device_dtypes", "load_opinfos", "compare", "run_case", "cases_for", "dispatch_source", "record_keys", "GRAD_SAMPLES",
           "check_samples"]

#: the per-op tests, in the order they run (names used in reports and xfails files)
TESTS = ("samples", "op", "out", "inplace", "view", "errors", "grad", "compiled")
#: frames of a sampler's traceback shown with its error, innermost first
SHOW_FRAMES = 3
#: how many samples of an op get a gradcheck
GRAD_SAMPLES = 3
#: mismatching elements printed in a failure
SHOW_MISMATCHES = 5


class ConformanceFailure(AssertionError):
    """A check failed; the message is written for a vendor who has not read the suite."""


class NotApplicable(Exception):
    """The check does not apply to this sample (e.g. in-place on a broadcasting sample)."""


def raised_at(e: BaseException, frames: int = SHOW_FRAMES) -> str:
    """Where ``e`` was raised: its innermost ``frames`` frames, innermost first, one a line
    (``at FILE:LINE in FUNCTION``), or "" when it has no traceback."""
    tb = traceback.extract_tb(e.__traceback__)[-frames:]
    return "\n".join(f"{'at' if i == 0 else 'called from'} {f.filename}:{f.lineno} in {f.name}"
                     for i, f in enumerate(reversed(tb)))


class SampleBuildError(Exception):
    """The op's sampler raised while building the samples of ``dtype``; the message names the error and
    the frames that raised it (``raised_at``), ``key`` tells errors of one root cause apart."""

    def __init__(self, opinfo_id: str, dtype: str, error: Exception, requires_grad: bool = False):
        self.opinfo_id, self.dtype, self.error, self.requires_grad = opinfo_id, dtype, error, requires_grad
        tb = traceback.extract_tb(error.__traceback__)
        where = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        self.key = (type(error).__name__, str(error), where)
        super().__init__(f"{type(error).__name__}: {error}\n  " + raised_at(error).replace("\n", "\n  "))


# ---------------------------------------------------------------- the device under test
@dataclasses.dataclass
class Target:
    """The device under test and what is tested on it."""
    device: object            # ember.device, with its index
    layout: str = "strided"
    dtypes: list = dataclasses.field(default_factory=list)   # dtype names tested
    second: object = None     # another device of the same type (device_count() > 1), else None
    requested: tuple = ()     # the dtype names asked for (--dtype), () for the device's default
    fast: bool = False        # quick iteration (--fast): only the first sample of each (op, dtype)

    @property
    def device_type(self) -> str:
        """The target device's type name."""
        return self.device.type


def device_dtypes(device_type: str) -> list:
    """The dtype names a device type declares: its runtime's ``dtypes`` attribute, else the
    ``provides.dtypes`` of its plugin's manifest, else every dense dtype."""
    import ember
    from ember import _registry, plugins
    dt = _registry.device_type(device_type)
    names = getattr(dt.runtime, "dtypes", None)
    if not names:
        info = next((p for p in plugins.list() if p.name == dt.plugin), None)
        names = (info.provides or {}).get("dtypes") if info is not None else None
    if not names:
        names = [d.name for d in ember.library.ALL_DENSE]
    order = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128"]
    names = [getattr(n, "name", n) for n in names]
    return sorted(set(names), key=lambda n: (order.index(n) if n in order else len(order), n))


def generic_dtypes() -> list:
    """Dtype names registered by plugins that provide dtypes but no device type (ember-quantized's
    qint8, quint8, qint32): they work on every device, and are tested when asked for (``--dtype``)."""
    import ember
    from ember import _registry, plugins
    _registry.ensure_loaded()
    out = []
    for p in plugins.list():
        prov = p.provides or {}
        if p.status == "loaded" and prov.get("dtypes") and not prov.get("device_types"):
            out += [getattr(d, "name", d) for d in prov["dtypes"] if hasattr(ember, getattr(d, "name", d))]
    return out


def make_target(device, dtypes=None, layout: str = "strided", fast: bool = False) -> Target:
    """A Target for ``device`` ("cpu", "vdev", "vdev:1"); ``dtypes`` restricts the dtypes tested; ``fast``
    tests only the first sample of each (op, dtype) and the first gradient sample of each op.

    :raises RuntimeError: when the device type is not installed or has no device."""
    import ember
    from ember import _registry
    dev = _registry.canonical_device(device)
    dt = _registry.device_type(dev.type)
    if not dt.runtime.is_available():
        raise RuntimeError(f"device type '{dev.type}' (plugin '{dt.plugin}') is installed but has no available device")
    if dev.type == "cpu" and dev.index is None:
        dev = ember.device("cpu")
    avail = device_dtypes(dev.type)
    if dtypes:
        want = [d.strip() for d in (dtypes.split(",") if isinstance(dtypes, str) else dtypes) if d.strip()]
        unknown = [d for d in want if d not in avail and d not in generic_dtypes()]
        if unknown:
            raise ValueError(f"dtype(s) {', '.join(unknown)} not declared by device type '{dev.type}' "
                             f"(it declares: {', '.join(avail)})")
        avail = [d for d in avail if d in want] + [d for d in want if d not in avail]
    second = None
    if dt.runtime.indexed:
        n = dt.runtime.device_count()
        if n > 1:
            second = ember.device(dev.type, ((dev.index or 0) + 1) % n)
    return Target(dev, layout, avail, second, tuple(want) if dtypes else (), fast)


def load_opinfos(ops=None, opinfos=None, device_type=None) -> list:
    """The op database (``ember.testing.opdb.op_db()``, or ``opinfos``), filtered by ``ops``:
    comma-separated ids / names / fnmatch patterns (``"add,sum*"``)."""
    if opinfos is None:
        try:
            from ember.testing.opdb import op_db
        except ImportError as e:
            raise RuntimeError(f"the op database ember.testing.opdb is not available ({e})") from None
        opinfos = op_db(device_type)
    elif callable(opinfos):
        opinfos = opinfos()
    opinfos = list(opinfos)
    if ops:
        pats = [p.strip() for p in (ops.split(",") if isinstance(ops, str) else ops) if p.strip()]
        opinfos = [o for o in opinfos if any(fnmatch.fnmatchcase(o.id, p) or fnmatch.fnmatchcase(o.name, p)
                                             for p in pats)]
    return opinfos


def _dtype(name):
    import ember
    return getattr(ember, name)


def op_dtypes(opinfo, target) -> list:
    """The dtype names ``opinfo`` is tested with on ``target``."""
    return opinfo.supported_dtypes(target.device_type, target.dtypes)


_SOURCE_RANK = {"native": 0, "composite": 1, "fallback": 2, "missing": 3}


def dispatch_source(opinfo, target, dtype_name, keys=None) -> str:
    """How the op resolved on the device for inputs of ``dtype_name``: native / composite / fallback /
    missing ('composite' too for an entry that is a Python function over ops, not a dispatcher op).

    ``keys`` are the dispatch keys the op's entry points actually resolved while its samples ran
    (``record_keys``): an entry point dispatches at the computation dtype (``exp`` of an int64 tensor runs
    the float32 kernel), so the input dtype's own key can say "composite" where a native kernel ran. The
    least native of them counts; without recorded keys, the input dtype's key is asked."""
    from ember import _dispatch
    op = _dispatch.ops.get(opinfo.name)
    if op is None:
        return "composite"
    if keys:
        return max((op.source(k) for k in keys), key=_SOURCE_RANK.__getitem__)
    return op.source((target.device_type, target.layout, _dtype(dtype_name)))


@contextlib.contextmanager
def record_keys(opinfo):
    """Within the block, collect in the yielded set the dispatch keys the op ``opinfo.name`` resolves.

    The op's resolved-kernel cache is emptied first, so each key its entry points meet is resolved (and
    recorded) once; the cache refills as usual. Nothing is recorded for an entry that is not a dispatcher op."""
    from ember import _dispatch
    op = _dispatch.ops.get(opinfo.name)
    keys = set()
    if op is None:
        yield keys
        return
    resolve = op._resolve

    def recording(key):
        keys.add(key)
        return resolve(key)
    op.cache.clear()
    op._resolve = recording          # an instance attribute: OpDef.resolve looks it up on the instance
    try:
        yield keys
    finally:
        del op._resolve


# ---------------------------------------------------------------- samples
_SAMPLE_CACHE: "collections.OrderedDict" = collections.OrderedDict()


def samples_of(opinfo, target, dtype_name, requires_grad=False) -> list:
    """The op's samples on the device (a small LRU: pytest asks for one sample at a time). In a fast run
    (``target.fast``) only the first sample is built, except for gradient samples (``grad_samples`` takes the
    first one with an input to differentiate, which need not be the first).

    :raises SampleBuildError: when the sampler raises (the error is cached like the samples).
    :raises MissingDtype: when a sample needs a dtype whose plugin is not loaded."""
    limit = 1 if target.fast and not requires_grad else None
    key = (id(opinfo), str(target.device), target.layout, dtype_name, requires_grad, limit)
    # the entry keeps its OpInfo alive and is checked against it: an id is only unique while its object lives,
    # and a later run's new OpInfo could otherwise get a dead one's id and its samples
    entry = _SAMPLE_CACHE.get(key)
    hit = entry[1] if entry is not None and entry[0] is opinfo else None
    if hit is None:
        dt = _dtype(dtype_name)
        try:
            sampler = opinfo.sample_inputs if target.layout == "strided" else opinfo.layout_samplers.get(target.layout)
            # islice: a fast run does not build the samples it would not check (most of its time otherwise)
            hit = [] if sampler is None else list(itertools.islice(sampler(opinfo, target.device, dt, requires_grad),
                                                                   limit))
        except MissingDtype as e:
            hit = e
        except Exception as e:  # noqa: BLE001 - a sampler's bug is a finding, reported by check_samples
            hit = SampleBuildError(opinfo.id, dtype_name, e, requires_grad)
        _SAMPLE_CACHE[key] = (opinfo, hit)
        while len(_SAMPLE_CACHE) > 4:
            _SAMPLE_CACHE.popitem(last=False)
    else:
        _SAMPLE_CACHE.move_to_end(key)
    if isinstance(hit, Exception):
        raise hit
    return hit


def buildable_samples(opinfo, target, dtype_name, requires_grad=False) -> list:
    """``samples_of``, or [] when they cannot be built (``check_samples`` reports why, once per op)."""
    try:
        return samples_of(opinfo, target, dtype_name, requires_grad)
    except (SampleBuildError, MissingDtype):
        return []


def grad_dtype(opinfo, target):
    """float64 where the device and the op have it, else float32; None when neither."""
    have = op_dtypes(opinfo, target)
    for d in ("float64", "float32"):
        if d in have:
            return d
    return None


def grad_samples(opinfo, target, dtype_name) -> list:
    """(index, sample) of the samples gradcheck runs on: the first GRAD_SAMPLES with a non-empty
    tensor that requires grad."""
    out = []
    for i, s in enumerate(buildable_samples(opinfo, target, dtype_name, requires_grad=True)):
        if any(t.numel() > 0 for t in _grad_leaves(s)):
            out.append((i, s))
        if len(out) == GRAD_SAMPLES:
            break
    return out


# ---------------------------------------------------------------- cases
@dataclasses.dataclass
class Case:
    """One check: test name, op (None for a device check), dtype name, sample index."""
    test: str
    opinfo: object
    dtype: str
    index: int = -1
    sample_name: str = ""

    @property
    def op_id(self) -> str:
        """The OpInfo's id, or '*' for a case not tied to an op."""
        return self.opinfo.id if self.opinfo is not None else "*"

    @property
    def id(self) -> str:
        """'op-dtype[-index_sample]' with characters other than word characters and dots replaced by '_'."""
        parts = [self.op_id, self.dtype]
        if self.index >= 0:
            parts.append(str(self.index) + (f"_{self.sample_name}" if self.sample_name else ""))
        return "-".join(re.sub(r"[^\w.]+", "_", p) for p in parts)


def applies(test, opinfo) -> bool:
    """Whether conformance test ``test`` (one of TESTS) applies to ``opinfo``."""
    return {"samples": opinfo.sample_inputs is not None or bool(opinfo.layout_samplers),
            "op": True, "out": opinfo.supports_out, "inplace": opinfo.inplace is not None,
            "view": opinfo.is_view, "errors": opinfo.error_inputs is not None,
            "grad": opinfo.supports_autograd,
            "compiled": opinfo.check is None}[test]     # (ops with a check() are random or data-dependent)


def opinfos_for_layout(opinfos, layout: str) -> list:
    """The entries a run at ``layout`` tests: for a non-strided layout those with a sampler for it;
    for strided, all but the entries that have samples for other layouts only (ember-sparse's)."""
    if layout != "strided":
        return [o for o in opinfos if layout in o.layout_samplers]
    return [o for o in opinfos if o.sample_inputs is not None or not o.layout_samplers]


def cases_for(test, target, opinfos) -> list:
    """Every Case of ``test`` on ``target`` (generates the samples to count them); in a fast run
    (``target.fast``), only the first sample of each (op, dtype) and the first gradient sample of each op."""
    first = 1 if target.fast else None
    out = []
    for o in opinfos:
        if not applies(test, o):
            continue
        if target.layout != "strided" and target.layout not in o.layout_samplers:
            continue
        if test in ("errors", "samples"):
            out.append(Case(test, o, "-"))
        elif test == "compiled":
            for d in op_dtypes(o, target):
                out.extend(Case(test, o, d, i, s.name) for i, s in enumerate(buildable_samples(o, target, d)[:1]))
        elif test == "grad":
            d = grad_dtype(o, target)
            if d is not None:
                out.extend(Case("grad", o, d, i, s.name) for i, s in grad_samples(o, target, d)[:first])
        else:
            for d in op_dtypes(o, target):
                out.extend(Case(test, o, d, i, s.name)
                           for i, s in enumerate(buildable_samples(o, target, d)[:first]))
    return out


def run_case(case, target):
    """Run one case: returns None when it passed; raises ConformanceFailure or NotApplicable."""
    if case.test == "samples":
        return check_samples(case.opinfo, target)
    if case.test == "errors":
        return check_errors(case.opinfo, target)
    if case.test == "grad":
        sample = samples_of(case.opinfo, target, case.dtype, requires_grad=True)[case.index]
        return check_grad(case.opinfo, target, case.dtype, case.index, sample)
    sample = samples_of(case.opinfo, target, case.dtype)[case.index]
    fn = {"op": check_op, "out": check_out, "inplace": check_inplace, "view": check_view,
          "compiled": check_compiled}[case.test]
    return fn(case.opinfo, target, case.dtype, case.index, sample)


# ---------------------------------------------------------------- comparison
def _np(x):
    import ember
    if isinstance(x, ember.Tensor):
        if x._layout.name != "strided":        # a sparse (or other layout's) tensor: its dense values
            x = x.detach().to_dense()
        return np.array(x.detach().cpu().numpy())
    return x


def _is_tensor(x):
    import ember
    return isinstance(x, ember.Tensor)


def _fmt_index(idx):
    return "()" if not idx else "(" + ", ".join(str(int(i)) for i in idx) + (",)" if len(idx) == 1 else ")")


def _scalar(x):
    return x.item() if hasattr(x, "item") else x


def _value_mismatches(got, exp, rtol, atol, exact):
    """A message for the elements of arrays ``got`` and ``exp`` (same shape) that differ, or None."""
    g, e = np.asarray(got), np.asarray(exp)
    kinds = {g.dtype.kind, e.dtype.kind}
    if "c" in kinds:
        g, e = g.astype(np.complex128), e.astype(np.complex128)
        if exact:
            ok = (g == e) | ((np.isnan(g.real) | np.isnan(g.imag)) & (np.isnan(e.real) | np.isnan(e.imag)))
        else:
            ok = (np.isclose(g.real, e.real, rtol, atol, equal_nan=True)
                  & np.isclose(g.imag, e.imag, rtol, atol, equal_nan=True))
    elif kinds & {"f"} or g.dtype.name == "bfloat16" or e.dtype.name == "bfloat16":
        g, e = g.astype(np.float64), e.astype(np.float64)
        ok = ((g == e) | (np.isnan(g) & np.isnan(e))) if exact else np.isclose(g, e, rtol, atol, equal_nan=True)
    else:   # integers, bool: exact
        ok = g == e
    ok = np.asarray(ok)
    if ok.all():
        return None
    bad = np.argwhere(~ok) if ok.ndim else np.zeros((1, 0), int)
    n_bad, n = int((~ok).sum()), max(int(ok.size), 1)
    tol = "exact comparison" if exact or kinds <= {"b", "i", "u"} else f"rtol={rtol:g}, atol={atol:g}"
    lines = [f"{n_bad} of {n} elements differ ({tol}); first mismatches:"]
    for idx in bad[:SHOW_MISMATCHES]:
        t = tuple(idx)
        lines.append(f"    index {_fmt_index(t)}: got {_scalar(g[t])!r}, expected {_scalar(e[t])!r}")
    return "\n".join(lines)


def _exact_for(opinfo, dtype_name, result_dtype_name) -> tuple:
    """(exact, rtol, atol) for results of ``result_dtype_name`` from inputs of ``dtype_name``."""
    import ember
    rd = getattr(ember, result_dtype_name, None)
    if opinfo.exact or rd is None or not (rd.is_floating_point or rd.is_complex):
        return True, 0.0, 0.0
    r1, a1 = opinfo.tolerance(dtype_name)
    r2, a2 = opinfo.tolerance(result_dtype_name)
    return False, max(r1, r2), max(a1, a2)


def compare(got, expected, opinfo, dtype_name, *, path="result", device=None, against="reference") -> list:
    """Differences between ``got`` (the op's result) and ``expected`` (numpy arrays from ``ref``,
    or tensors from the cpu run), as a list of readable messages (empty when they agree)."""
    problems = []
    if isinstance(expected, (tuple, list)) and not _is_tensor(expected):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return [f"{path}: expected a sequence of {len(expected)} values, got {_brief(got)}"]
        for i, (g, e) in enumerate(zip(got, expected)):
            problems += compare(g, e, opinfo, dtype_name, path=f"{path}[{i}]", device=device, against=against)
        return problems
    if _is_tensor(expected) or isinstance(expected, np.ndarray) or isinstance(expected, np.generic):
        if not _is_tensor(got):
            return [f"{path}: expected a Tensor, got {_brief(got)}"]
        if device is not None and got.device != device:
            problems.append(f"{path}: on device {got.device}, expected {device}")
        if _is_tensor(expected):
            if got.dtype != expected.dtype:
                problems.append(f"{path}: dtype {got.dtype.name}, expected {expected.dtype.name} (as on cpu)")
            eshape = tuple(expected.shape)
        else:
            eshape = tuple(np.shape(expected))
        if tuple(got.shape) != eshape:
            return problems + [f"{path}: shape {tuple(got.shape)}, expected {eshape}"]
        exact, rtol, atol = _exact_for(opinfo, dtype_name, got.dtype.name)
        exp = _np(expected)
        if exact and not _is_tensor(expected) and got.dtype.name in ("bfloat16", "float16") and exp.dtype.kind == "f":
            exp = exp.astype(got.dtype.numpy_dtype)     # an exact op: the reference rounded to the result's dtype
        msg = _value_mismatches(_np(got), exp, rtol, atol, exact)
        if msg:
            problems.append(f"{path} differs from the {against}: {msg}")
        return problems
    # Python scalars / None / other values: equality (floats within tolerance)
    g = got.item() if _is_tensor(got) and got.numel() == 1 and not isinstance(expected, (np.ndarray,)) else got
    if isinstance(expected, float) and isinstance(g, (int, float)):
        exact, rtol, atol = _exact_for(opinfo, dtype_name, "float64")
        if not (g == expected or (np.isnan(g) and np.isnan(expected)) or abs(g - expected) <= atol + rtol * abs(expected)):
            problems.append(f"{path}: got {g!r}, expected {expected!r} (the {against})")
    elif g != expected:
        problems.append(f"{path}: got {_brief(g)}, expected {_brief(expected)} (the {against})")
    return problems


def _brief(x):
    from .. import describe
    return describe(x) if _is_tensor(x) else (repr(x) if len(repr(x)) < 80 else type(x).__name__)


# ---------------------------------------------------------------- running an op
def _call(opinfo, sample, fn=None, **extra):
    fn = fn or opinfo.op
    return fn(sample.input, *sample.args, **dict(sample.kwargs, **extra))


def _processed(sample, result):
    return sample.output_process(result) if sample.output_process is not None else result


def _header(test, opinfo, target, dtype_name, index, sample):
    where = f"sample {index}" + (f" '{sample.name}'" if sample is not None and sample.name else "")
    head = f"{test} failed: op '{opinfo.id}' on device {target.device}, dtype {dtype_name}"
    if sample is None:
        return head
    return f"{head}, {where}\n  sample: {sample!r}"


def _fail(test, opinfo, target, dtype_name, index, sample, problems):
    body = "\n".join("  " + p.replace("\n", "\n  ") for p in problems)
    raise ConformanceFailure(f"{_header(test, opinfo, target, dtype_name, index, sample)}\n{body}")


def _guard(test, opinfo, target, dtype_name, index, sample, what, fn):
    """Run ``fn``; an exception becomes a ConformanceFailure that says what raised."""
    try:
        return fn()
    except (ConformanceFailure, NotApplicable):
        raise
    except Exception as e:  # noqa: BLE001 - any error of the device's kernels is a finding
        tb = traceback.extract_tb(e.__traceback__)
        where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
        _fail(test, opinfo, target, dtype_name, index, sample,
              [f"{what} raised {type(e).__name__}: {e}{where}"])


def _to_cpu(sample):
    import ember
    cpu = ember.device("cpu")
    return sample.transform(lambda t: t.detach().to(cpu))


def _np_for_ref(t):
    """The numpy input of a reference: bfloat16 as float32 (numpy's ufuncs do not know bfloat16;
    the result is compared within bfloat16's tolerance)."""
    a = _np(t)
    return a.astype(np.float32) if a.dtype.name == "bfloat16" else a


def _ref_result(opinfo, sample):
    npsample = sample.transform(_np_for_ref)
    res = opinfo.ref(npsample.input, *npsample.args, **npsample.kwargs)
    if sample.output_process is not None:
        try:
            res = sample.output_process(res)
        except (AttributeError, TypeError, IndexError):
            pass
    return res


def _run_check(opinfo, sample, result, cpu_result):
    """The OpInfo's ``check``; AssertionError when it fails (or raises anything)."""
    try:
        ok = opinfo.check(sample, result, cpu_result)
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001 - the check calls ops too: their errors are findings
        tb = traceback.extract_tb(e.__traceback__)
        where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
        raise AssertionError(f"raised {type(e).__name__}: {e}{where}") from None
    if ok is False:
        raise AssertionError("check() returned False")


def check_op(opinfo, target, dtype_name, index, sample):
    """``op``: values, device, dtype and shape against the reference (see the module docstring)."""
    args = ("op", opinfo, target, dtype_name, index, sample)
    result = _guard(*args, "the op", lambda: _processed(sample, _call(opinfo, sample)))
    problems = []
    on_cpu = target.device_type == "cpu"
    cpu_result = result
    if not on_cpu:
        cpu_sample = _to_cpu(sample)
        cpu_result = _guard(*args, "the same sample on cpu", lambda: _processed(cpu_sample, _call(opinfo, cpu_sample)))
    if opinfo.check is not None:
        try:
            _run_check(opinfo, sample, result, cpu_result)
        except AssertionError as e:
            problems.append(f"the op's check() failed: {e}")
        for t in _tensors(result):
            if t.device != target.device:
                problems.append(f"a result is on device {t.device}, expected {target.device}")
    else:
        if not on_cpu:
            problems += compare(result, cpu_result, opinfo, dtype_name, device=target.device, against="cpu result")
        if opinfo.ref is not None:
            expected = _guard(*args, "the numpy reference", lambda: _ref_result(opinfo, sample))
            problems += compare(result, expected, opinfo, dtype_name, device=target.device, against="numpy reference")
    if problems:
        _fail(*args, problems)


def check_compiled(opinfo, target, dtype_name, index, sample):
    """``compiled``: the op called through ``ember.compile`` - warm-up, capture, then two replays on the device -
    returns what it returns eagerly, bit for bit (a replay runs the same kernels on the same inputs), in
    dtype, shape and device; the arguments are left as eager leaves them."""
    import ember
    args = ("compiled", opinfo, target, dtype_name, index, sample)

    def call(inp, a, kw):
        return opinfo.op(inp, *a, **kw)
    before = [(t, _host_copy(t)) for t in _tensors((sample.input, sample.args, tuple(sample.kwargs.values())))]
    try:
        expected = _processed(sample, _call(opinfo, sample))
    except Exception as e:  # noqa: BLE001 - the op test reports (or expects) that failure
        raise NotApplicable(f"the op raises eagerly ({type(e).__name__}); the op test reports it") from None
    changed = [t for t, b in before if not _unchanged(b, t)]
    if changed:
        raise NotApplicable("the op writes into its arguments (checked by the inplace test)")
    compiled = ember.compile(call)
    got = None
    with ember.no_grad():
        for _ in range(4):
            got = _guard(*args, "the compiled op",
                         lambda: _processed(sample, compiled(sample.input, sample.args, dict(sample.kwargs))))
    info = compiled._compiled.info()
    replays = sum(r["replays"] for r in info)
    problems = compare(got, expected, opinfo, dtype_name, device=target.device, against="eager result")
    if problems:
        _fail(*args, problems)
    if not replays:
        why = [r["eager_reason"] for r in info if r["eager_reason"]] or [compiled._compiled.uncached]
        if why[0] is None:
            _fail(*args, ["the compiled op never replayed, and ember.compile gave no reason"])
        raise NotApplicable(f"ember.compile runs it eagerly: {why[0]}")


def _empty_like_result(r, device):
    import ember
    if _is_tensor(r):
        return ember.empty(tuple(r.shape), dtype=r.dtype, device=device)
    if isinstance(r, tuple) and r and all(_is_tensor(x) for x in r):
        return tuple(ember.empty(tuple(x.shape), dtype=x.dtype, device=device) for x in r)
    raise NotApplicable("the op's result is not a tensor or a tuple of tensors")


def check_out(opinfo, target, dtype_name, index, sample):
    """``out``: ``op(..., out=t)`` returns ``t`` holding the functional result."""
    args = ("out", opinfo, target, dtype_name, index, sample)
    expected = _guard(*args, "the op", lambda: _call(opinfo, sample))
    out = _empty_like_result(expected, target.device)
    res = _guard(*args, "the op with out=", lambda: _call(opinfo, sample, out=out))
    problems = []
    if _is_tensor(out) and res is not out:
        problems.append(f"op(..., out=t) returned {_brief(res)}, not t itself")
    if opinfo.check is not None:
        try:
            _run_check(opinfo, sample, _processed(sample, out), expected)
        except AssertionError as e:
            problems.append(f"the op's check() failed on the out= result: {e}")
    else:
        problems += compare(_processed(sample, out), _processed(sample, expected), opinfo, dtype_name,
                            path="out", device=target.device, against="functional result")
    if problems:
        _fail(*args, problems)


def check_inplace(opinfo, target, dtype_name, index, sample):
    """``inplace``: the in-place variant writes the functional result into its input and returns it."""
    args = ("inplace", opinfo, target, dtype_name, index, sample)
    if not _is_tensor(sample.input):
        raise NotApplicable("the sample's input is not a tensor")
    expected = _guard(*args, "the op", lambda: _call(opinfo, sample))
    if not _is_tensor(expected) or tuple(expected.shape) != tuple(sample.input.shape) \
            or expected.dtype != sample.input.dtype:
        raise NotApplicable("the result's shape or dtype differs from the input's (in-place does not apply)")
    self_ = sample.input.detach().clone()
    s2 = dataclasses.replace(sample, input=self_)
    res = _guard(*args, "the in-place variant", lambda: _call(opinfo, s2, fn=opinfo.inplace))
    problems = []
    if res is not self_:
        problems.append(f"the in-place variant returned {_brief(res)}, not its input")
    if opinfo.check is not None:
        try:
            _run_check(opinfo, sample, _processed(sample, self_), expected)
        except AssertionError as e:
            problems.append(f"the op's check() failed on the in-place result: {e}")
    else:
        problems += compare(_processed(sample, self_), _processed(sample, expected), opinfo, dtype_name,
                            path="input after the in-place op", device=target.device, against="functional result")
    if problems:
        _fail(*args, problems)


def _tensors(x):
    if _is_tensor(x):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors(v)]
    return []


def check_view(opinfo, target, dtype_name, index, sample):
    """``view``: the result shares the input's storage and a write through it shows in the input."""
    import ember
    args = ("view", opinfo, target, dtype_name, index, sample)
    if not _is_tensor(sample.input):
        raise NotApplicable("the sample's input is not a tensor")
    base = sample.input.detach().clone()
    s2 = dataclasses.replace(sample, input=base)
    result = _guard(*args, "the op", lambda: _call(opinfo, s2))
    outs = _tensors(result)
    problems = []
    ptr = base.untyped_storage().data_ptr()
    for i, t in enumerate(outs):
        if t.numel() and t.untyped_storage().data_ptr() != ptr:
            problems.append(f"result {i} ({_brief(t)}) does not share storage with the input (is_view=True)")
    if not problems:
        for i, t in enumerate(outs):
            if not t.numel():
                continue
            value = True if t.dtype == ember.bool else 7
            try:
                t.fill_(value)
            except RuntimeError:
                continue   # e.g. an expanded view that cannot be written; the storage check stands
            again = _tensors(_guard(*args, "the op (after writing through the view)", lambda: _call(opinfo, s2)))[i]
            if not (_np(again) == value).all():       # on the host: the check's own ops must not count
                problems.append(f"a write through result {i} is not seen in the input")
            break
    if problems:
        _fail(*args, problems)


def _host_copy(t):
    """(shape, stride, values) of a strided tensor, to tell whether a failing call wrote into it; None for
    other layouts (sparse: not judged)."""
    if getattr(t.layout, "name", "strided") != "strided":
        return None
    try:
        return tuple(t.shape), tuple(t.stride()), np.array(t.detach().cpu().numpy(), copy=True)
    except Exception:  # noqa: BLE001 - a dtype the host cannot view (quantized, ...): shape and stride only
        return tuple(t.shape), tuple(t.stride()), None


def _unchanged(before, t) -> bool:
    if before is None:
        return True
    shape, stride, values = before
    if tuple(t.shape) != shape or tuple(t.stride()) != stride:
        return False
    if values is None:
        return True
    now = np.asarray(t.detach().cpu().numpy())
    return bool(np.array_equal(values, now, equal_nan=values.dtype.kind in "fc"))


def _failing_call_writes_nothing(opinfo, sample, n, problems):
    """An error input, run through the out= variant (an out shaped like the input, holding a sentinel) and the
    in-place variant: when the call fails, neither its inputs nor ``out`` may have changed (shape, strides,
    values). A variant that does not fail on these arguments is not judged here."""
    import ember
    ts = _tensors([sample.input, list(sample.args), list(sample.kwargs.values())])
    variants = []
    try:        # a sample the device cannot even hold a copy of (a dtype it lacks) has no variants to judge
        if opinfo.supports_out and _is_tensor(sample.input):
            x = sample.input
            out = ember.full(tuple(x.shape), 7, dtype=x.dtype, device=x.device) \
                if x.dtype.is_floating_point or x.dtype.name.startswith(("int", "uint")) \
                else ember.zeros(tuple(x.shape), dtype=x.dtype, device=x.device)
            variants.append(("out=", lambda: _call(opinfo, sample, out=out), ts + [out]))
        if opinfo.inplace is not None and _is_tensor(sample.input):
            self_ = sample.input.detach().clone()
            s2 = dataclasses.replace(sample, input=self_)
            variants.append(("in-place", lambda: _call(opinfo, s2, fn=opinfo.inplace), ts[1:] + [self_]))
    except Exception:  # noqa: BLE001
        return
    for label, call, watched in variants:
        before = [_host_copy(t) for t in watched]
        try:
            call()
        except Exception:  # noqa: BLE001 - the call failed: it must have written nothing
            changed = [i for i, (b, t) in enumerate(zip(before, watched)) if not _unchanged(b, t)]
            if changed:
                problems.append(f"error input {n} {sample!r}: the {label} variant failed but wrote into "
                                f"{'its out= tensor' if label == 'out=' and changed[-1] == len(watched) - 1 else 'a tensor'} "
                                f"first (a failing call must write nothing)")


def check_samples(opinfo, target):
    """``samples``: the op's samples build for every dtype tested (and its gradient samples). Each
    distinct error is reported once, with the frames that raised it and the dtypes it hit.

    :raises NotApplicable: when no samples could be built because a plugin's dtype is missing."""
    errors, missing, built = {}, [], 0
    grad = grad_dtype(opinfo, target) if applies("grad", opinfo) else None
    builds = [(d, False) for d in op_dtypes(opinfo, target)] + ([(grad, True)] if grad else [])
    if not builds:
        raise NotApplicable(f"none of the op's dtypes ({', '.join(opinfo.dtypes or ())}) is tested on "
                            f"{target.device_type}")
    for dtype_name, requires_grad in builds:
        try:
            samples_of(opinfo, target, dtype_name, requires_grad)
            built += 1
        except MissingDtype as e:
            missing.append(str(e))
        except SampleBuildError as e:
            errors.setdefault(e.key, []).append(e)
    if errors:
        problems = []
        for same in errors.values():
            hit = ", ".join(f"{e.dtype}{' (gradient samples)' if e.requires_grad else ''}" for e in same)
            problems.append(f"building the samples raised {same[0]}\nfor dtype(s) {hit}; the op's other checks of "
                            f"these dtypes did not run")
        _fail("samples", opinfo, target, "-", 0, None, problems)
    if missing and not built:
        raise NotApplicable(missing[0])


def check_errors(opinfo, target):
    """``errors``: each ErrorInput raises its class with a message matching its regex, on the device; and a
    failing call - functional, out= or in-place - writes nothing into any of its tensors."""
    try:
        error_inputs = opinfo.errors(target.device)
    except MissingDtype as e:
        raise NotApplicable(str(e)) from None
    except Exception as e:  # noqa: BLE001 - the error_inputs generator's own bug is a finding
        _fail("errors", opinfo, target, "-", 0, None,
              [f"building the error inputs raised {type(e).__name__}: {e}\n  " + raised_at(e).replace("\n", "\n  ")])
    problems, n = [], 0
    for n, ei in enumerate(error_inputs, 1):
        s = ei.sample
        watched = _tensors([s.input, list(s.args), list(s.kwargs.values())])
        before = [_host_copy(t) for t in watched]
        try:
            _call(opinfo, s)
        except ei.error_type as e:
            if not re.search(ei.error_regex, str(e)):
                problems.append(f"error input {n} {s!r}: raised {type(e).__name__} as expected, but its message\n"
                                f"      {str(e)!r}\n    does not match {ei.error_regex!r}")
        except Exception as e:  # noqa: BLE001
            problems.append(f"error input {n} {s!r}: raised {type(e).__name__}: {e}\n"
                            f"    expected {ei.error_type.__name__} matching {ei.error_regex!r}")
        else:
            problems.append(f"error input {n} {s!r}: did not raise (expected {ei.error_type.__name__} matching "
                            f"{ei.error_regex!r})")
        if not all(_unchanged(b, t) for b, t in zip(before, watched)):
            problems.append(f"error input {n} {s!r}: the call failed but wrote into one of its tensors first "
                            f"(a failing call must write nothing)")
        _failing_call_writes_nothing(opinfo, s, n, problems)
    if not n:
        raise NotApplicable("the op has no error inputs")
    if problems:
        _fail("errors", opinfo, target, "-", 0, None, problems)


def _grad_leaves(sample):
    return [t for t in _tensors([sample.input, list(sample.args), list(sample.kwargs.values())])
            if t.requires_grad]


def check_grad(opinfo, target, dtype_name, index, sample):
    """``grad``: gradcheck on the device (float64, or float32 with eps=1e-3, atol=rtol=1e-2)."""
    from ember.autograd import gradcheck
    args = ("grad", opinfo, target, dtype_name, index, sample)
    leaves = _grad_leaves(sample)
    if not leaves:
        raise NotApplicable("no input of the sample requires grad")
    ids = {id(t): i for i, t in enumerate(leaves)}

    def rebuild(ts):
        return sample.transform(lambda t: ts[ids[id(t)]] if id(t) in ids else t)

    def func(*ts):
        s = rebuild(ts)
        r = _processed(s, _call(opinfo, s))
        outs = [t for t in _tensors(r) if t.dtype.is_floating_point or t.dtype.is_complex]
        return outs[0] if len(outs) == 1 else tuple(outs)

    probe = _guard(*args, "the op", lambda: func(*leaves))
    if not _tensors(probe):
        raise NotApplicable("the op has no floating-point output")
    kw = dict(eps=1e-6, atol=1e-5, rtol=1e-3) if dtype_name == "float64" else dict(eps=1e-3, atol=1e-2, rtol=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _guard(*args, "gradcheck", lambda: gradcheck(func, tuple(leaves), **kw))

"""``device_roundtrip``: every dtype registered in the process, through the device's data movement.

A runtime receives every dtype the process knows, not only those its manifest declares: the core's
dense dtypes and those other plugins register (ember-quantized's ``qint8``, ``quint8``, ``qint32``,
which "work on every device" because their kernels are built from dense ops on the integers they
store). So the check runs once per registered dtype (``ember._dtype._BY_NAME``; with ``--dtype``,
the dtypes asked for), each its own result ``device_roundtrip <dtype>``, with what the device owes
that dtype decided by ``dtype_standing``:

``declared``    the device type declares it (runtime ``dtypes``, else manifest ``provides.dtypes``):
                every step below must give exactly the cpu result.
``generic``     a plugin dtype with no device type of its own (qint8) whose storage dtype (int8) the
                device declares: the same as declared - the plugin's kernels will send it there.
``undeclared``  anything else (opencl and ``complex64``; a plugin dtype stored as a dtype the device
                lacks): each step must either give exactly the cpu result or raise a *clear error* -
                ``TypeError``, ``ValueError``, ``RuntimeError`` or ``NotImplementedError`` whose message
                names the dtype. Wrong values, or any other exception (``KeyError: 'qint8'``), fail.
                When some step raised a clear error the result is *not applicable* (a skip), with
                the error as the reason; when every step worked it passes.

The steps, each compared with the same step on cpu (values exactly, NaN == NaN; for a quantized
tensor its stored integers and its quantization parameters): ``.to(device)`` and back of a 0-dim,
an empty, a 2-D and a non-contiguous tensor (the copy keeps dtype and device); ``clone()`` on the
device; ``.to()`` the second device of the type when there is one; ``ember.tensor(..., device=)``
then ``tolist()``; ``fill_`` of a tensor and of a strided slice of it. A step that raises on cpu
as well (``fill_`` of a quantized tensor) is not the device's to pass and is left out.
"""
from __future__ import annotations

import re

from ._check_common import fail, same
from ._runner import NotApplicable, device_dtypes, generic_dtypes

__all__ = ["roundtrip_dtypes", "dtype_standing", "check_roundtrip", "CLEAR_ERRORS"]

#: the exception classes a device may raise for a dtype it does not declare (with the dtype's name)
CLEAR_ERRORS = (TypeError, ValueError, RuntimeError, NotImplementedError)

_ORDER = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]


def roundtrip_dtypes(target) -> list:
    """The dtype names ``device_roundtrip`` runs on: those asked for with ``--dtype``
    (``target.requested``), else every dtype registered in the process, dense ones first."""
    if target.requested:
        return list(target.requested)
    from ember import _dtype, _registry
    _registry.ensure_loaded()
    names = list(_dtype._BY_NAME)
    return sorted(names, key=lambda n: (_ORDER.index(n) if n in _ORDER else len(_ORDER), names.index(n)))


def dtype_standing(target, name) -> tuple:
    """(``"declared"`` | ``"generic"`` | ``"undeclared"``, why) for dtype ``name`` on the target's device
    type (see the module docstring)."""
    import ember
    declared = device_dtypes(target.device_type)
    if name in declared:
        return "declared", f"declared by device type '{target.device_type}'"
    storage = None
    if name in generic_dtypes():
        storage = getattr(getattr(ember, name).numpy_dtype, "name", None)
        if storage in declared:
            return "generic", (f"a plugin dtype for every device, stored as {storage}, which device type "
                               f"'{target.device_type}' declares")
    stored = f" (stored as {storage})" if storage else ""
    return "undeclared", (f"{name}{stored} is not declared by device type '{target.device_type}' "
                          f"(it declares: {', '.join(declared)})")


def _qparams(t):
    """The quantization parameters of ``t`` (None for a tensor that is not quantized)."""
    if not getattr(t, "is_quantized", False):
        return None
    q = t.qscheme()
    if "channel" in str(q):
        return (str(q), t.q_per_channel_scales().cpu().tolist(), t.q_per_channel_zero_points().cpu().tolist(),
                t.q_per_channel_axis())
    return str(q), t.q_scale(), t.q_zero_point()


def _same_tensor(got, exp, what):
    """A problem when ``got`` (any device) differs from cpu tensor ``exp``: dtype, shape, quantization
    parameters or values (exactly)."""
    if got.dtype != exp.dtype:
        return f"{what}: dtype {got.dtype}, expected {exp.dtype}"
    if _qparams(got) != _qparams(exp):
        return f"{what}: quantization parameters {_qparams(got)}, expected {_qparams(exp)}"
    return same(got, exp, what)


def _steps(target, name):
    """(label, device fn, cpu fn, compare) of every step; ``compare(device result, cpu result)`` gives a
    problem or None."""
    import ember
    from .._opinfo import make_tensor
    dt, dev = getattr(ember, name), target.device
    steps = []

    def moved(t, where):
        y = t.to(where)
        if y.device != ember.device(where) or y.dtype != t.dtype:
            raise _Wrong(f".to({where}) gave device {y.device}, dtype {y.dtype}")
        return y

    for shape, nc in (((), False), ((0,), False), ((3, 4), False), ((3, 4), True)):
        x = make_tensor(shape, dtype=dt, noncontiguous=nc, seed=1)
        label = f"{shape}{' non-contiguous' if nc else ''}"
        steps.append((f"{label} round trip cpu -> {dev} -> cpu", lambda x=x: moved(x, dev).to("cpu"),
                      lambda x=x: x, _same_tensor))
    x = make_tensor((3, 4), dtype=dt, seed=2)
    steps.append((f"clone() on {dev} (of a transposed tensor)", lambda: moved(x, dev).t().clone().to("cpu"),
                  lambda: x.t().clone(), _same_tensor))
    if target.second is not None:
        steps.append((f"{dev} -> {target.second} -> cpu", lambda: moved(moved(x, dev), target.second).to("cpu"),
                      lambda: x, _same_tensor))
    steps.append((f"ember.tensor([1, 0, 1], device={dev}).tolist()",
                  lambda: ember.tensor([1, 0, 1], dtype=dt, device=dev).tolist(),
                  lambda: ember.tensor([1, 0, 1], dtype=dt).tolist(),
                  lambda g, e, what: None if g == e else f"{what}: got {g}, expected {e}"))

    def filled(where):
        t = ember.empty((3, 4), dtype=dt, device=where)
        t.fill_(1)
        t[:, ::2].fill_(0)
        return t.to("cpu")
    steps.append(("fill_(1) then fill_(0) of a [:, ::2] slice", lambda: filled(dev), lambda: filled("cpu"),
                  _same_tensor))
    return steps


class _Wrong(Exception):
    """A step gave a wrong result that is not a value (device or dtype of a copy)."""


def _clear(e, name) -> bool:
    """Whether ``e`` is a clear error for dtype ``name``: one of CLEAR_ERRORS, naming the dtype."""
    return isinstance(e, CLEAR_ERRORS) and re.search(rf"\b{re.escape(name)}\b", str(e)) is not None


def check_roundtrip(target, dtype):
    """dtype ``dtype`` survives cpu -> device -> cpu (0-dim, empty, 2-D, non-contiguous), clone on the device,
    a copy to the second device, ``ember.tensor(..., device=)`` and ``fill_`` (see the module docstring for
    what an undeclared dtype owes)."""
    standing, why = dtype_standing(target, dtype)
    try:
        steps = _steps(target, dtype)
    except Exception as e:  # noqa: BLE001 - the test tensors are built on cpu: not the device's to pass
        raise NotApplicable(f"cannot build a {dtype} tensor on cpu to compare with "
                            f"({type(e).__name__}: {e})") from None
    problems, clear = [], []
    for label, on_device, on_cpu, compare in steps:
        what = f"{dtype} {label}"
        try:
            expected = on_cpu()
        except Exception:  # noqa: BLE001 - cpu cannot do it either (fill_ of qint8): not the device's to pass
            continue
        try:
            got = on_device()
        except _Wrong as e:
            problems.append(f"{what}: {e}")
            continue
        except Exception as e:  # noqa: BLE001 - every error is judged here
            if standing == "undeclared" and _clear(e, dtype):
                clear.append(f"{label}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                continue
            problems.append(f"{what}: raised {type(e).__name__}: {e}")
            continue
        try:
            p = compare(got, expected, what)
        except Exception as e:  # noqa: BLE001 - the result cannot even be read back
            p = f"{what}: reading the result back raised {type(e).__name__}: {e}"
        if p:
            problems.append(p)
    if problems and standing == "undeclared":
        problems.append(f"({why}: the device may refuse it, but with TypeError, ValueError, RuntimeError or "
                        f"NotImplementedError naming {dtype}, never with wrong values or another exception)")
    if problems:
        fail("roundtrip", target, problems, dtype)
    if clear:
        raise NotApplicable(f"{why}; it raised a clear error: {clear[0]}"
                            + (f" (and {len(clear) - 1} more step(s))" if len(clear) > 1 else ""))

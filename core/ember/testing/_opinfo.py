"""The op database's record types: OpInfo, SampleInput, ErrorInput, and make_tensor.

Note: how to add an op to the database
======================================
1. Declare the op (``ember._ops``) or, in a plugin, define it with ``ember.library``.
2. Add one ``OpInfo`` to the list of the category module (``ember.testing.opdb.<category>``)
   or, for a plugin's op, return it from the plugin's ``ember_opinfos()`` hook.
   Give at least: ``name`` (the op's name, as in ``ember._dispatch.ops``), ``op`` (how a
   user calls it), ``ref`` (a numpy reference taking and returning numpy arrays; None when
   the op has no closed form, e.g. random ops, which set ``check`` instead), ``dtypes``
   and ``sample_inputs``.
3. ``sample_inputs(op, device, dtype, requires_grad)`` yields ``SampleInput``s: build them
   with ``make_tensor`` and the helpers of ``ember.testing._samples`` (they cover 0-dim,
   empty, broadcasting, non-contiguous, transposed and sliced inputs for you).
4. ``error_inputs(op, device)`` yields ``ErrorInput``s: a sample, the exception class
   PyTorch raises and a regular expression its message must match.
5. Run ``ember conformance cpu --op NAME`` (or ``pytest --pyargs ember.testing.conformance
   --ember-device cpu -k NAME``); the suite checks every sample against ``ref`` and, on
   another device, against the cpu result.

Skips and expected failures are data (``xfails`` below, or a plugin's xfails file), scoped
to (test, device type, dtype) — never a blanket skip.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Optional

import numpy as np

__all__ = ["OpInfo", "SampleInput", "ErrorInput", "make_tensor", "describe", "DEFAULT_TOLERANCES", "MissingDtype",
           "plugin_dtype"]

#: (rtol, atol) per dtype name, used when an OpInfo gives none (PyTorch's defaults for
#: assert_close, loosened for the reduced-precision floats)
DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}


def describe(x) -> str:
    """How a sample's argument prints in a failure: ``Tensor[size=(3, 4), device="cpu", dtype=float32]``
    (with ``stride=`` when it is not contiguous); other values as ``repr``."""
    import ember
    if isinstance(x, ember.Tensor):
        if x.layout.name != "strided":
            return f'Tensor[size={tuple(x.shape)}, layout={x.layout.name}, device="{x.device}", dtype={x.dtype.name}]'
        extra = "" if x.is_contiguous() else f", stride={tuple(x.stride())}"
        return f'Tensor[size={tuple(x.shape)}{extra}, device="{x.device}", dtype={x.dtype.name}]'
    if isinstance(x, (list, tuple)) and any(isinstance(v, ember.Tensor) for v in x):
        inner = ", ".join(describe(v) for v in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    return repr(x)


class MissingDtype(LookupError):
    """Building a sample or an error input needs a dtype that no loaded plugin registers (qint8
    without ember-quantized). The conformance suite reports the check as not applicable, with this
    message as the reason, instead of failing it."""


def plugin_dtype(name: str):
    """``ember.<name>``, a dtype a plugin registers ("qint8", "quint8", "qint32": ember-quantized),
    for samplers and ``error_inputs`` to use instead of ``ember.qint8``.

    :raises MissingDtype: when the plugin is not installed, not loaded or excluded (the message
        says which, and how to change it)."""
    import ember
    try:
        return getattr(ember, name)
    except AttributeError as e:
        raise MissingDtype(f"needs dtype {name}: {e}") from None


@dataclasses.dataclass
class SampleInput:
    """One call of an op: ``op(input, *args, **kwargs)``.

    ``input`` is the first argument (usually a Tensor; a list of tensors for ``cat``).
    ``name`` says what the sample exercises ("0-dim", "broadcast", "transposed", ...), so
    a failure names it. ``output_process`` optionally maps the op's result before
    comparison (e.g. keep only the values of a (values, indices) pair with ties)."""
    input: Any
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    name: str = ""
    output_process: Optional[Callable] = None

    def __repr__(self):
        parts = [describe(self.input)] + [describe(a) for a in self.args] + \
                [f"{k}={describe(v)}" for k, v in self.kwargs.items()]
        return f"SampleInput[{self.name}]({', '.join(parts)})" if self.name else f"SampleInput({', '.join(parts)})"

    def transform(self, fn):
        """The sample with ``fn`` applied to every tensor argument (e.g. move to a device)."""
        import ember

        def t(x):
            if isinstance(x, ember.Tensor):
                return fn(x)
            if isinstance(x, (list, tuple)):
                return type(x)(t(v) for v in x)
            return x
        return SampleInput(t(self.input), tuple(t(a) for a in self.args), {k: t(v) for k, v in self.kwargs.items()},
                           self.name, self.output_process)


@dataclasses.dataclass
class ErrorInput:
    """A call that must fail: ``sample``, PyTorch's exception class ``error_type`` and a
    regular expression ``error_regex`` the message must match (``re.search``)."""
    sample: SampleInput
    error_type: type
    error_regex: str


@dataclasses.dataclass
class OpInfo:
    """Everything the conformance suite knows about one op (in the style of PyTorch's OpInfo).

    Only ``name`` is required; every other field has the default a typical op needs.
    """
    #: the op's name in the dispatcher (``ember._dispatch.ops``); also the test id
    name: str
    #: how a user calls it: ``op(sample.input, *sample.args, **sample.kwargs)``; defaults to
    #: ``getattr(ember, name)``
    op: Optional[Callable] = None
    #: a variant name for ops tested in several ways (e.g. "alpha" for add with alpha=)
    variant: str = ""
    #: numpy reference: ``ref(np_input, *np_args, **kwargs)`` -> array(s), same structure as
    #: the op's result; None when there is none (random ops: see ``check``)
    ref: Optional[Callable] = None
    #: dtypes the op supports (names, e.g. "float32"), on every device unless
    #: ``dtypes_per_device`` says otherwise; None = every dtype the device supports
    dtypes: Optional[Iterable[str]] = None
    #: {device type: dtype names} overriding ``dtypes`` for that device type
    dtypes_per_device: dict = dataclasses.field(default_factory=dict)
    #: generator ``sample_inputs(op, device, dtype, requires_grad)`` of SampleInput (raising
    #: MissingDtype when a sample needs a plugin's dtype that is not loaded: see ``plugin_dtype``)
    sample_inputs: Optional[Callable] = None
    #: generator ``error_inputs(op, device)`` of ErrorInput (MissingDtype as for ``sample_inputs``)
    error_inputs: Optional[Callable] = None
    #: {dtype name: (rtol, atol)} overriding DEFAULT_TOLERANCES
    tolerances: dict = dataclasses.field(default_factory=dict)
    #: gradients are checked (gradcheck on the samples, float64 or float32 on devices without it)
    supports_autograd: bool = False
    #: the op accepts ``out=`` (checked: same result, written into the given tensor)
    supports_out: bool = False
    #: the in-place variant, e.g. ``lambda t, *a, **k: t.add_(*a, **k)``; None when there is none
    inplace: Optional[Callable] = None
    #: the result is a view of the input (shares storage): checked by writing through it
    is_view: bool = False
    #: the op returns a data-dependent shape or is not deterministic in ways ``ref`` cannot
    #: follow; ``check(sample, result, cpu_result)`` replaces the value comparison (random ops:
    #: distribution checks; None = compare with ``ref`` / the cpu result)
    check: Optional[Callable] = None
    #: ops whose result must equal the cpu result exactly on other devices (indexing, sorting)
    exact: bool = False
    #: {layout name: sampler} — a sampler like ``sample_inputs`` that yields samples whose
    #: tensors have that layout (e.g. "sparse_coo", contributed by the layout's plugin)
    layout_samplers: dict = dataclasses.field(default_factory=dict)
    #: expected failures: a set of (test name, device type or "*", dtype name or "*"), each
    #: with a reason in ``xfail_reasons``
    xfails: set = dataclasses.field(default_factory=set)
    xfail_reasons: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.op is None:
            import ember
            self.op = getattr(ember, self.name)

    @property
    def id(self) -> str:
        """``name`` or ``name.variant``: the op's id in test names and reports."""
        return f"{self.name}.{self.variant}" if self.variant else self.name

    def supported_dtypes(self, device_type: str, available: Iterable[str]) -> list:
        """The dtype names to test on ``device_type``, given the dtypes the device supports."""
        want = self.dtypes_per_device.get(device_type, self.dtypes)
        avail = list(available)
        if want is None:   # "every dtype" means the dense ones; a plugin dtype (qint8) only when listed
            from ember.library import ALL_DENSE
            return [d for d in avail if d in {x.name for x in ALL_DENSE}]
        return [d for d in avail if d in set(want)]

    def tolerance(self, dtype_name: str):
        """(rtol, atol) for results of ``dtype_name`` (exact, (0, 0), for integer and bool dtypes)."""
        if dtype_name in self.tolerances:
            return self.tolerances[dtype_name]
        return DEFAULT_TOLERANCES.get(dtype_name, (0.0, 0.0))

    def samples(self, device, dtype, requires_grad=False):
        """The op's samples as a list (empty when it has no sampler)."""
        if self.sample_inputs is None:
            return []
        return list(self.sample_inputs(self, device, dtype, requires_grad))

    def errors(self, device):
        """The ErrorInputs of ``error_inputs`` for ``device`` as a list ([] when the entry has none)."""
        return [] if self.error_inputs is None else list(self.error_inputs(self, device))


def make_tensor(shape, *, device="cpu", dtype=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, seed=None):
    """A tensor of random values for tests (matches torch.testing.make_tensor in spirit).

    Values: floats uniform in [low, high) (default [-9, 9)), integers in [low, high) (default
    [-9, 10), [0, 10) for unsigned), bools random; complex: both parts so drawn.
    ``noncontiguous=True`` returns a strided view (every other element of a larger tensor)
    with the same values' distribution. ``exclude_zero`` replaces zeros (for divisors).
    Deterministic given ``seed`` (else a fixed default stream per call order)."""
    import ember
    dtype = dtype or ember.float32
    rng = _rng(seed)
    shape = tuple(shape) if not isinstance(shape, int) else (shape,)
    n = int(np.prod(shape)) if shape else 1
    full = (n * 2,) if noncontiguous else (n,)
    name = dtype.name
    if name == "bool":
        a = rng.random(full) < 0.5
    elif dtype.is_complex:
        lo, hi = (-9.0 if low is None else low), (9.0 if high is None else high)
        a = rng.uniform(lo, hi, full) + 1j * rng.uniform(lo, hi, full)
    elif dtype.is_floating_point:
        lo, hi = (-9.0 if low is None else low), (9.0 if high is None else high)
        a = rng.uniform(lo, hi, full)
    elif name in ("qint8", "quint8", "qint32"):
        a = None
    else:
        unsigned = name.startswith("uint")
        lo = (0 if unsigned else -9) if low is None else int(low)
        hi = 10 if high is None else int(high)
        a = rng.integers(lo, hi, full)
    if exclude_zero and a is not None:
        a = np.where(a == 0, 1, a) if name != "bool" else np.ones_like(a)
    if name in ("qint8", "quint8", "qint32"):   # quantized (ember-quantized): uniform floats quantized per tensor
        from ember._ops._quantized import sample_qparams
        lo, hi = (-9.0 if low is None else low), (9.0 if high is None else high)
        scale, zp = sample_qparams(dtype, lo, hi)
        t = ember.quantize_per_tensor(ember.tensor(rng.uniform(lo, hi, full).astype(np.float32), device=device),
                                      scale, zp, dtype)
    else:
        t = ember.tensor(a.astype(dtype.numpy_dtype if name != "bfloat16" else np.float32), dtype=dtype, device=device)
    if noncontiguous:
        t = t[::2]
    t = t.reshape(shape) if not noncontiguous else _strided_view(t, shape)
    if requires_grad and (dtype.is_floating_point or dtype.is_complex):
        t = t.detach().requires_grad_(True)
    return t


def _strided_view(flat_every_other, shape):
    """A non-contiguous view of ``shape`` over ``flat_every_other`` (a stride-2 1-D view)."""
    if not shape:
        return flat_every_other[0]
    st, acc = [], 2
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return flat_every_other.as_strided(shape, tuple(reversed(st)), flat_every_other.storage_offset())


_STREAM = np.random.default_rng(20261121)


def _rng(seed):
    return _STREAM if seed is None else np.random.default_rng(seed)

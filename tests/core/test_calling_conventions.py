"""The dispatcher's calling convention: what a kernel receives, whatever form the user wrote.

A vendor's max-pool kernel that unpacked ``kernel_size`` crashed on ``nn.MaxPool2d(2)``: kernels
used to receive ``int[2]`` arguments as the user passed them, and the op database only used
tuples, so conformance passed it. Now the generated entry point normalises ``int[N]``, ``bool[N]``,
``ScalarType`` and ``Device`` arguments once, before meta, composite, fallback, autograd and every
kernel (docs/vendor-guide.md, "Calling conventions"). These tests register deliberately strict
kernels (tuples of exact ints, of the declared length, nothing else) and check that (1) every
user-facing form reaches them as tuples, forward and backward, composites included, and (2) the op
database's samples hold the forms a tuple-only kernel chokes on when it is given them unnormalised,
so conformance would catch a dispatcher or kernel that lets them through.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _dispatch
from ember.library import Library

_ns_counter = itertools.count()

# the ops with int[N] arguments that have cpu kernels; each gets a strict kernel in front of it
STRICT_OPS = ("max_pool2d_with_indices", "max_pool2d_with_indices_backward", "conv2d", "conv2d_backward_input",
              "conv2d_backward_weight", "im2col", "col2im", "sum", "amax", "roll")
DTYPES = (ember.float32, ember.float64)


def _check_strict(op, args, kwargs):
    """What a strict kernel asserts: every int[N] / int[] argument is a tuple of exact ints, of length N
    (max_pool's empty stride, which means kernel_size, excepted); an optional one may be None."""
    names = [a.name for a in op.schema.arguments]
    bound = dict(zip(names, args), **{k: v for k, v in kwargs.items() if k != "out"})
    for a in op.schema.arguments:
        if not a.type.startswith("int["):
            continue
        v = bound[a.name]
        if v is None and a.type.endswith("?"):
            continue
        assert type(v) is tuple, f"{op.name}: '{a.name}' reached the kernel as {v!r}"
        assert all(type(x) is int for x in v), f"{op.name}: '{a.name}' reached the kernel as {v!r}"
        if a.size and a.size > 1 and not (a.name == "stride" and v == ()):
            assert len(v) == a.size, f"{op.name}: '{a.name}' reached the kernel as {v!r}"
    return bound


@pytest.fixture
def strict():
    """Strict cpu kernels (priority 10) in front of ember-cpu's for STRICT_OPS and float32 / float64; each
    records the int[N] arguments it got, then runs the kernel it shadows. Yields {op name: [calls]}."""
    seen = {name: [] for name in STRICT_OPS}
    lib = Library(f"strictcc{next(_ns_counter)}")
    for name in STRICT_OPS:
        op = _dispatch.ops[name]
        for dt in DTYPES:
            inner = op.resolve(("cpu", "strided", dt))

            def kernel(*args, __op=op, __inner=inner, **kwargs):
                bound = _check_strict(__op, args, kwargs)
                seen[__op.name].append({a.name: bound[a.name] for a in __op.schema.arguments
                                        if a.type.startswith("int[")})
                return __inner(*args, **kwargs)
            lib.impl(name, kernel, device="cpu", dtypes=[dt], priority=10)
    yield seen
    lib._destroy()


def test_max_pool2d_int_kernel_size_reaches_the_kernel_as_a_pair(strict):
    x = ember.randn(1, 1, 8, 8)
    F.max_pool2d(x, 2)
    ember.nn.MaxPool2d(2)(x)                 # the module passes stride=kernel_size, as PyTorch's does
    assert strict["max_pool2d_with_indices"] == [
        {"kernel_size": (2, 2), "stride": (), "padding": (0, 0), "dilation": (1, 1)},
        {"kernel_size": (2, 2), "stride": (2, 2), "padding": (0, 0), "dilation": (1, 1)}]


def test_lists_and_one_element_sequences_become_tuples_of_the_declared_length(strict):
    x = ember.randn(1, 2, 9, 9)
    ember.max_pool2d_with_indices(x, [3], [2, 2], 1)
    ember.max_pool2d_with_indices(x, kernel_size=(3,), stride=[1], dilation=np.int64(2))
    assert strict["max_pool2d_with_indices"] == [
        {"kernel_size": (3, 3), "stride": (2, 2), "padding": (1, 1), "dilation": (1, 1)},
        {"kernel_size": (3, 3), "stride": (1, 1), "padding": (0, 0), "dilation": (2, 2)}]


def test_conv2d_forward_and_backward_kernels_get_pairs(strict):
    x = ember.randn(2, 3, 8, 8, requires_grad=True)
    w = ember.randn(4, 3, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, stride=2, padding=[1, 1])
    ember.conv2d(x.detach(), w.detach(), None, 2, [1, 1], 1)
    assert strict["conv2d"] == [{"stride": (2, 2), "padding": (1, 1), "dilation": (1, 1)}] * 2
    y.sum().backward()
    want = {"stride": (2, 2), "padding": (1, 1), "dilation": (1, 1)}
    assert [{k: c[k] for k in want} for c in strict["conv2d_backward_input"]] == [want]
    assert [{k: c[k] for k in want} for c in strict["conv2d_backward_weight"]] == [want]
    assert strict["conv2d_backward_input"][0]["input_size"] == (2, 3, 8, 8)


def test_autograd_backward_kernel_gets_pairs(strict):
    x = ember.randn(1, 1, 6, 6, requires_grad=True)
    ember.max_pool2d_with_indices(x, 2)[0].sum().backward()
    assert strict["max_pool2d_with_indices_backward"] == [
        {"kernel_size": (2, 2), "stride": (), "padding": (0, 0), "dilation": (1, 1)}]
    assert x.grad.sum().item() == 9.0


def test_unfold_fold_reductions_and_roll(strict):
    x = ember.randn(1, 2, 5, 5)
    cols = F.unfold(x, 2, padding=[1, 0])
    F.fold(cols, 5, 2, padding=(1, 0))
    assert strict["im2col"] == [{"kernel_size": (2, 2), "dilation": (1, 1), "padding": (1, 0), "stride": (1, 1)}]
    assert strict["col2im"] == [{"output_size": (5, 5), "kernel_size": (2, 2), "dilation": (1, 1),
                                 "padding": (1, 0), "stride": (1, 1)}]
    t = ember.randn(3, 4)
    ember.sum(t, 1)
    ember.sum(t, [0, 1])
    ember.sum(t)
    assert strict["sum"] == [{"dim": (1,)}, {"dim": (0, 1)}, {"dim": None}]
    ember.amax(t, None)          # PyTorch takes None as amax's default, []
    ember.amax(t, -1)
    assert strict["amax"] == [{"dim": ()}, {"dim": (-1,)}]
    ember.roll(t, 1, 0)
    assert strict["roll"] == [{"shifts": (1,), "dims": (0,)}]


def test_composites_receive_the_normalised_arguments_too():
    """A defined op with no native kernel runs its composite, which sees the same forms as a kernel would;
    ``bool[N]``, optional ``int[1]?`` and ``ScalarType?`` follow the same rules."""
    got = []

    def meta(self, k=1, flags=False, dim=None, *, dtype=None):
        return self.device, (self.device.type, self.layout.name, self.dtype), tuple(self.shape), self.dtype

    def composite(self, k=1, flags=False, dim=None, *, dtype=None, out):
        got.append((k, flags, dim, dtype))
        out.copy_(self)

    lib = Library(f"strictcc{next(_ns_counter)}")
    try:
        lib.define("probe(Tensor self, int[2] k=1, bool[2] flags=False, int[1]? dim=None, *, "
                   "ScalarType? dtype=None) -> Tensor", meta, composite=composite)
        probe = getattr(ember.ops, lib.ns).probe
        x = ember.ones(2)
        probe(x)
        probe(x, [3, 4], True, 0, dtype=ember.float64)
        probe(x, 5, [False, True], [0, 1])
        assert got == [((1, 1), (False, False), None, None), ((3, 4), (True, True), (0,), ember.float64),
                       ((5, 5), (False, True), (0, 1), None)]
        with pytest.raises(TypeError, match=r"probe\(\): argument 'k' must be tuple of ints, not float"):
            probe(x, 1.5)
        with pytest.raises(TypeError, match=r"argument 'k' must be tuple of ints, but found element of type bool "
                                            r"at pos 1"):
            probe(x, (1, True))
        with pytest.raises(TypeError, match=r"argument 'flags' must be tuple of bools, not int"):
            probe(x, 1, 1)
        with pytest.raises(TypeError, match=r"probe\(\): argument 'dtype' must be ember.dtype, not str"):
            probe(x, dtype="float64")
    finally:
        lib._destroy()


def test_unsized_int_list_rejects_a_bare_int_and_a_float():
    with pytest.raises(TypeError, match=r"flip\(\): argument 'dims' must be tuple of ints, not int"):
        ember.flip(ember.ones(3), 0)
    with pytest.raises(TypeError, match=r"argument 'kernel_size' must be tuple of ints, not float"):
        ember.max_pool2d_with_indices(ember.ones(1, 1, 4, 4), 2.0)


def test_ops_without_such_arguments_get_no_normalisation_code():
    """Only ops with int[N] / bool[N] / ScalarType / Device arguments pay for normalisation: the generated
    entry point of ``add`` is the plain template."""
    ns = {}
    assert _dispatch._normalise(_dispatch.ops["add"], ns) == "" and ns == {}
    assert "__norm_kernel_size" in _dispatch._normalise(_dispatch.ops["max_pool2d_with_indices"], {})


# ---------------------------------------------------------------- the op database holds the user forms
def _core_entries_with_int_lists():
    from ember.testing.opdb import core_op_db
    out = []
    for info in core_op_db():
        op = _dispatch.ops.get(info.name)
        if op is None or getattr(info.op, "_op", None) is not op:   # only entries that call the op itself
            continue
        if any(a.size for a in op.schema.arguments if a.type.startswith("int[")):
            out.append(info)
    return out


def _raw_bound(op, sample):
    """The sample's arguments bound to the schema as the old dispatcher passed them: as written, with the
    schema's defaults unexpanded."""
    args = (sample.input,) + tuple(sample.args)
    bound = {a.name: v for a, v in zip(op.schema.arguments, args)}
    bound.update(sample.kwargs)
    for a in op.schema.arguments:
        if a.name not in bound and a.has_default:
            bound[a.name] = a.default
    return bound


def _tuple_only(op, bound):
    """What a kernel written for tuples does with its int[N] arguments: unpack them."""
    for a in op.schema.arguments:
        if a.type.startswith("int[") and a.size and a.size > 1 and bound.get(a.name) != ():
            _, _ = bound[a.name]                   # TypeError for an int, ValueError for a wrong length


ENTRIES = _core_entries_with_int_lists()


def test_the_entries_checked_are_the_ones_with_int_lists():
    names = {e.name for e in ENTRIES}
    assert {"max_pool2d_with_indices", "max_pool2d_with_indices_backward", "conv2d", "conv2d_backward_input",
            "conv2d_backward_weight", "im2col", "col2im", "sum", "amax", "logsumexp"} <= names


@pytest.mark.parametrize("info", ENTRIES, ids=lambda e: e.id)
def test_samples_pass_the_int_form_and_the_list_form(info):
    op = _dispatch.ops[info.name]
    sized = [a for a in op.schema.arguments if a.type.startswith("int[") and a.size]
    forms = set()
    for s in info.sample_inputs(op=info, device="cpu", dtype=ember.float32):
        b = _raw_bound(op, s)
        for a in sized:
            v = b.get(a.name)
            forms.add("int" if isinstance(v, int) else "list" if isinstance(v, list) else "other")
    assert {"int", "list"} <= forms, f"{info.id}: the samples pass int[N] arguments only as {sorted(forms)}"


@pytest.mark.parametrize("name", ["max_pool2d_with_indices", "max_pool2d_with_indices_backward", "conv2d",
                                  "conv2d_backward_input", "conv2d_backward_weight", "im2col", "col2im"])
def test_a_tuple_only_kernel_fails_on_the_raw_samples_and_passes_through_the_dispatcher(name, strict):
    """Given the samples' arguments unnormalised (what the dispatcher used to do), a tuple-only kernel
    raises on some of them: conformance would have caught it. Through today's dispatcher the strict
    kernels run every sample and match the reference."""
    from ember.testing.opdb import opinfo
    info = opinfo(name)
    op = _dispatch.ops[name]
    crashed = 0
    for s in info.sample_inputs(op=info, device="cpu", dtype=ember.float64):
        try:
            _tuple_only(op, _raw_bound(op, s))
        except (TypeError, ValueError):
            crashed += 1
        got = info.op(s.input, *s.args, **s.kwargs)
        want = info.ref(*[a.numpy() if isinstance(a, ember.Tensor) else a for a in (s.input,) + tuple(s.args)],
                        **s.kwargs)
        if s.output_process is not None:
            got, want = s.output_process(got), s.output_process(want)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-7, atol=1e-7, err_msg=f"{name} {s.name}")
    assert crashed, f"{name}: no sample passes an int[2] argument in a form a tuple-only kernel rejects"
    assert strict[name], f"{name}: the strict kernel was not called"

"""The dispatcher: schema parsing, ``ember.library.Library`` (impl / define), the
resolution order (exact key -> ANY dtype -> ANY device -> composite -> fallback ->
NotImplementedError), cache invalidation on registration, and ``_destroy``."""
from __future__ import annotations

import itertools

import pytest

import ember
from ember import _dispatch
from ember._dispatch import ANY
from ember._schema import parse_schema
from ember.library import Library

_ns_counter = itertools.count()


# ---------------------------------------------------------------- schemas
def test_parse_schema_basic():
    s = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    assert (s.name, s.overload, s.full_name) == ("add", "Tensor", "add.Tensor")
    assert [a.name for a in s.arguments] == ["self", "other", "alpha"]
    assert [a.kwarg_only for a in s.arguments] == [False, False, True]
    assert [a.is_tensor for a in s.arguments] == [True, True, False]
    assert s.arguments[2].default == 1 and s.arguments[2].has_default
    assert not s.arguments[0].has_default
    assert [(r.name, r.type) for r in s.returns] == [(None, "Tensor")]
    assert str(s) == s.text


def test_parse_schema_mutation_optionals_lists_and_named_returns():
    s = parse_schema("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")
    assert s.arguments[0].mutated and not s.arguments[1].mutated
    assert s.arguments[2].default is False
    assert s.returns[0].type == "Tensor"
    s = parse_schema("sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
    assert s.overload == ""
    assert [a.type for a in s.arguments] == ["Tensor", "int[]?", "bool", "ScalarType?"]
    assert s.arguments[1].default is None and s.arguments[3].kwarg_only
    s = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    assert [(r.name, r.type) for r in s.returns] == [("values", "Tensor"), ("indices", "Tensor")]
    s = parse_schema("f(Tensor[] tensors, int[] size=[2, 3], float eps=1e-05, str mode='mean', "
                     "Tensor? weight=None) -> Tensor")
    assert s.arguments[0].type == "Tensor[]" and s.arguments[0].is_tensor
    assert s.arguments[1].default == (2, 3)
    assert s.arguments[2].default == 1e-05
    assert s.arguments[3].default == "mean"
    assert s.arguments[4].type == "Tensor?" and s.arguments[4].default is None
    s = parse_schema("g(Tensor self, int[] dims=[]) -> Tensor")
    assert s.arguments[1].default == ()


@pytest.mark.parametrize("bad", ["add(Tensor self", "no_arrow(Tensor self)", "f(Tensor) -> Tensor",
                                 "f(Tensor self, 3 x) -> Tensor"])
def test_parse_schema_malformed(bad):
    with pytest.raises(ValueError, match="malformed"):
        parse_schema(bad)


def test_lookup_accepts_overload_suffix_and_refuses_unknown():
    assert _dispatch.lookup("add.out") is _dispatch.lookup("add") is ember.add._op
    with pytest.raises(ValueError, match="unknown op 'no_such_op'"):
        _dispatch.lookup("no_such_op")


def test_generated_entry_point_signature_and_docs():
    import inspect
    sig = inspect.signature(ember.add)
    assert list(sig.parameters) == ["self", "other", "alpha", "out"]
    assert sig.parameters["alpha"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["alpha"].default == 1
    assert "matches torch.add" in ember.add.__doc__.lower()
    assert ember.add._op.schema.name == "add"
    with pytest.raises(TypeError):
        ember.add(ember.ones(2))          # missing argument, as a Python function says


# ---------------------------------------------------------------- a test op namespace
def _meta(self, scale=2.0):
    return self.device, (self.device.type, self.layout.name, self.dtype), tuple(self.shape), self.dtype


@pytest.fixture
def lib():
    """A fresh namespace with an op ``<ns>::probe(Tensor self, float scale=2.0) -> Tensor``."""
    ns = f"disp{next(_ns_counter)}"
    lib = Library(ns)
    name = lib.define("probe(Tensor self, float scale=2.0) -> Tensor", _meta, doc="a test op")
    assert name == f"{ns}::probe"
    yield lib
    lib._destroy()
    assert not hasattr(ember.ops, ns)
    assert f"{ns}_probe" not in _dispatch.ops


def _writer(value):
    def kernel(self, scale=2.0, *, out):
        out.fill_(value)
    return kernel


def _call(lib, x=None):
    x = ember.ones(2) if x is None else x
    return getattr(ember.ops, lib.ns).probe(x).tolist()


def test_define_makes_op_reachable_in_plugin_namespace(lib):
    probe = getattr(ember.ops, lib.ns).probe
    assert probe.__doc__ == "a test op"
    lib.impl("probe", lambda self, scale=2.0, *, out: out.copy_(self * scale), device="cpu")
    assert probe(ember.tensor([1.0, 2.0]), 3.0).tolist() == [3.0, 6.0]
    assert probe(ember.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    # out= works as for core ops
    o = ember.empty(2)
    assert probe(ember.tensor([1.0, 2.0]), out=o) is o and o.tolist() == [2.0, 4.0]
    # the qualified name works for impl too
    lib.impl(f"{lib.ns}::probe", _writer(9), device="cpu", dtypes=[ember.float64])
    assert probe(ember.ones(1, dtype=ember.float64)).tolist() == [9.0]


def test_define_twice_is_refused(lib):
    with pytest.raises(RuntimeError, match="declared twice"):
        lib.define("probe(Tensor self) -> Tensor", _meta)


def test_define_inplace_variant():
    lib = Library(f"disp{next(_ns_counter)}")
    try:
        lib.define("twice(Tensor self) -> Tensor", lambda self: _meta(self), inplace=True)
        lib.impl("twice", lambda self, *, out: out.copy_(self + self), device="cpu")
        ns = getattr(ember.ops, lib.ns)
        x = ember.tensor([1.0, 2.0])
        assert ns.twice_(x) is x and x.tolist() == [2.0, 4.0] and x._version >= 1
    finally:
        lib._destroy()


def test_impl_unknown_op_is_refused(lib):
    with pytest.raises(ValueError, match="unknown op 'nope'"):
        lib.impl("nope", _writer(1), device="cpu")


def test_no_kernel_raises_not_implemented_naming_op_key_plugins_and_keys(lib):
    lib.impl("probe", _writer(1), device="cpu", dtypes=[ember.float64])
    with pytest.raises(NotImplementedError) as ei:
        _call(lib)
    msg = str(ei.value)
    assert f"Could not run '{lib.ns}_probe'" in msg
    assert "(cpu, strided, float32)" in msg
    assert "Installed plugins: [" in msg and "cpu" in msg
    assert "(cpu, strided, float64)" in msg.split("Keys with kernels")[1]


def test_resolution_order(lib):
    op = _dispatch.lookup(f"{lib.ns}_probe")
    lib.impl("probe", _writer(4), device=ANY, dtypes=ANY)                       # (ANY, layout, ANY)
    assert _call(lib) == [4.0, 4.0] and op.source(("cpu", "strided", ember.float32)) == "native"
    lib.impl("probe", _writer(3), device=ANY, dtypes=[ember.float32])           # (ANY, layout, dtype)
    assert _call(lib) == [3.0, 3.0]
    lib.impl("probe", _writer(2), device="cpu", dtypes=ANY)                     # (device, layout, ANY)
    assert _call(lib) == [2.0, 2.0]
    lib.impl("probe", _writer(1), device="cpu", dtypes=[ember.float32])         # exact key
    assert _call(lib) == [1.0, 1.0]
    # other dtypes fall back along the same order
    assert _call(lib, ember.ones(2, dtype=ember.float64)) == [2.0, 2.0]


def test_any_device_beats_composite_and_composite_beats_fallback():
    ns = f"disp{next(_ns_counter)}"
    lib = Library(ns)
    try:
        def composite(self, scale=2.0, *, out):
            out.copy_(self * scale + 100)
        lib.define("comp(Tensor self, float scale=2.0) -> Tensor", _meta, composite=composite)
        f = getattr(ember.ops, ns).comp
        op = f._op
        assert f(ember.ones(1)).tolist() == [102.0]
        assert op.source(("cpu", "strided", ember.float32)) == "composite"
        lib.impl("comp", _writer(5), device=ANY, dtypes=ANY)
        assert f(ember.ones(1)).tolist() == [5.0]
        assert op.source(("cpu", "strided", ember.float32)) == "native"
    finally:
        lib._destroy()


def test_caches_are_invalidated_on_registration_and_removal(lib):
    op = _dispatch.lookup(f"{lib.ns}_probe")
    key = ("cpu", "strided", ember.float32)
    lib.impl("probe", _writer(1), device=ANY)
    assert _call(lib) == [1.0, 1.0]
    assert key in op.cache
    other = Library(lib.ns)          # a second library adds a more specific kernel
    other.impl("probe", _writer(2), device="cpu", dtypes=[ember.float32])
    assert key not in op.cache
    assert _call(lib) == [2.0, 2.0]
    other._destroy()                 # and removing it restores the previous resolution
    assert key not in op.cache
    assert _call(lib) == [1.0, 1.0]


def test_same_key_twice_names_both_owners_and_priority_overrides(lib):
    lib.impl("probe", _writer(1), device="cpu", dtypes=[ember.float32])
    intruder = Library("intruder")
    with pytest.raises(RuntimeError, match=rf"kernel for op '{lib.ns}_probe' at key \(cpu, strided, float32\) is "
                                           rf"registered twice: by '{lib.ns}' and by 'intruder'"):
        intruder.impl(f"{lib.ns}::probe", _writer(2), device="cpu", dtypes=[ember.float32])
    assert _call(lib) == [1.0, 1.0]
    intruder.impl(f"{lib.ns}::probe", _writer(2), device="cpu", dtypes=[ember.float32], priority=1)
    assert _call(lib) == [2.0, 2.0]
    intruder._destroy()
    assert _call(lib) == [1.0, 1.0]


def test_overriding_a_core_kernel_with_priority_and_destroy_restores_it():
    lib = Library("override_test")
    try:
        with pytest.raises(RuntimeError, match="registered twice: by 'cpu' and by 'override_test'"):
            lib.impl("neg", lambda self, *, out: out.fill_(7), device="cpu", dtypes=[ember.float32])
        lib.impl("neg", lambda self, *, out: out.fill_(7), device="cpu", dtypes=[ember.float32], priority=5)
        assert ember.neg(ember.ones(2)).tolist() == [7.0, 7.0]
        assert ember.neg(ember.ones(2, dtype=ember.float64)).tolist() == [-1.0, -1.0]
    finally:
        lib._destroy()
    assert ember.neg(ember.ones(2)).tolist() == [-1.0, -1.0]


def test_impl_as_decorator(lib):
    @lib.impl("probe", device="cpu")
    def k(self, scale=2.0, *, out):
        out.fill_(scale)
    assert callable(k)
    assert getattr(ember.ops, lib.ns).probe(ember.ones(1), 6.0).tolist() == [6.0]


def test_missing_device_type_in_key_names_the_package():
    op = ember.add._op
    with pytest.raises(RuntimeError, match="device type 'nodev' is not available: pip install ember-nodev"):
        op.resolve(("nodev", "strided", ember.float32))
    assert op.source(("nodev", "strided", ember.float32)) == "missing"


def test_meta_runs_before_kernel_so_errors_are_backend_independent(lib):
    calls = []
    lib.impl("probe", lambda self, scale=2.0, *, out: calls.append(1), device="cpu")
    o = ember.empty(2, dtype=ember.int32)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        getattr(ember.ops, lib.ns).probe(ember.ones(2), out=o)
    assert calls == []

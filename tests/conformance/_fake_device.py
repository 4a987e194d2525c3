"""A tiny fake device plugin ('fakedev') for the conformance runner's own tests.

Memory is numpy byte buffers (two devices, so device-to-device copies are exercised); native
kernels for copy_ and fill_ (the runtime primitives), a deliberately wrong ``exp`` (returns
exp(x) + 1 for float32), and the cpu fallback for everything else.

``FakePlugin(quirks=...)`` adds the bugs the device checks must catch (names in ``QUIRKS``).
"""
from __future__ import annotations

import os

import numpy as np

import ember
import ember.library as L
from ember.plugins import hookimpl
from ember.testing import OpInfo, ErrorInput, SampleInput, HostMemoryRuntime, make_tensor

HERE = os.path.dirname(os.path.abspath(__file__))


#: bugs a FakePlugin can be given, for the device checks' own tests
QUIRKS = {
    "qint8_unsigned": "a qint8 copy_ kernel that stores qint8 as unsigned: negative integers become 0",
    "complex_unsupported": "host -> device copies of complex dtypes (undeclared) raise a TypeError naming them",
    "int16_garbage": "device -> host copies of int16 (undeclared) add 1 to every value",
    "int16_keyerror": "device -> host copies of int16 (undeclared) raise KeyError('int16')",
    "relu_identity": "a float32 relu kernel that returns its input (no threshold)",
}


class FakeRuntime(HostMemoryRuntime):
    name = "fakedev"

    def __init__(self, quirks=()):
        super().__init__()
        self.quirks = set(quirks)

    def from_numpy(self, t, array):
        if "complex_unsupported" in self.quirks and t.dtype.is_complex:
            raise TypeError(f"fakedev cannot hold {t.dtype.name} tensors")
        super().from_numpy(t, array)

    def to_numpy(self, t):
        a = super().to_numpy(t)
        if t.dtype.name == "int16" and "int16_garbage" in self.quirks:
            return a + 1
        if t.dtype.name == "int16" and "int16_keyerror" in self.quirks:
            raise KeyError("int16")
        return a

    def device_count(self):
        return 2

    def new_generator_state(self, seed, device_index):
        from ember_cpu._runtime import CPUGeneratorState
        return CPUGeneratorState(seed)


class FakePlugin:
    """The plugin object; ``xfails`` names its xfails file (relative to this directory)."""

    def __init__(self, xfails=None, quirks=()):
        unknown = set(quirks) - set(QUIRKS)
        assert not unknown, f"unknown quirks {unknown}"
        self.rt = FakeRuntime(quirks)
        self.xfails = xfails

    @hookimpl
    def ember_plugin_info(self):
        info = {"name": "fakedev", "version": "0.0.1", "api_version": "1.0",
                "provides": {"device_types": ["fakedev"], "dtypes": ["bool", "int64", "float32", "float64"]}}
        if self.xfails:
            info["conformance_xfails"] = self.xfails
        return info

    @hookimpl
    def ember_register(self, registry):
        rt = self.rt

        def wrong_exp(self, *, out):
            np.copyto(rt.view(out), np.exp(rt.to_numpy(self)) + 1)   # deliberately wrong

        registry.register_device_type("fakedev", rt)
        lib = registry.library("fakedev")
        rt.register_copy_and_fill(lib)
        lib.impl("exp", wrong_exp, device="fakedev", dtypes=[ember.float32])
        registry.register_fallback("fakedev", L.cpu_fallback)
        if "qint8_unsigned" in rt.quirks:
            from ember_quantized import _kernels as Q

            def unsigned_qint8_copy(dst, src, non_blocking=False):
                Q.copy_(dst, src, non_blocking)
                if dst.device.type == "fakedev":
                    v = rt.view(dst)
                    v[v < 0] = 0                        # deliberately wrong
                return dst
            lib.impl("copy_", unsigned_qint8_copy, device="fakedev", dtypes=[ember.qint8])
        if "relu_identity" in rt.quirks:
            def relu_identity(self, *, out):
                np.copyto(rt.view(out), rt.to_numpy(self))   # deliberately wrong
            lib.impl("relu", relu_identity, device="fakedev", dtypes=[ember.float32])


def _unary(op, device, dtype, requires_grad=False):
    yield SampleInput(make_tensor((3, 4), device=device, dtype=dtype, seed=1, requires_grad=requires_grad),
                      name="2-D")
    yield SampleInput(make_tensor((), device=device, dtype=dtype, seed=2, requires_grad=requires_grad),
                      name="0-dim")


def _binary(op, device, dtype, requires_grad=False):
    a = make_tensor((3, 4), device=device, dtype=dtype, seed=3, requires_grad=requires_grad)
    b = make_tensor((4,), device=device, dtype=dtype, seed=4, requires_grad=requires_grad)
    yield SampleInput(a, (b,), name="broadcast")


def _add_errors(op, device):
    yield ErrorInput(SampleInput(ember.ones(2, device=device), (ember.ones(3, device=device),)), RuntimeError,
                     r"must match the size")


def opinfos():
    """exp (wrong on fakedev float32) and add (through the fallback) and t (a view)."""
    return [
        OpInfo("exp", ref=np.exp, dtypes=("float32", "float64"), sample_inputs=_unary, supports_autograd=True),
        OpInfo("add", ref=np.add, dtypes=("int64", "float32", "float64"), sample_inputs=_binary,
               supports_out=True, inplace=lambda t, *a, **k: t.add_(*a, **k), error_inputs=_add_errors,
               supports_autograd=True),
        OpInfo("t", ref=lambda a: a.T, dtypes=("float32",), sample_inputs=_unary, is_view=True),
    ]


def passing_opinfos():
    """The entries that pass everywhere (add, t)."""
    return [o for o in opinfos() if o.name != "exp"]


def _wrong_for_0_dim(a):
    return -a if a.ndim else a + 1        # the reference itself is wrong for the 0-dim sample


def xfail_opinfos():
    """Entries with known failures on any device, for counting expected failures: neg fails on its 0-dim
    sample only, abs on every sample; add and t pass (add has out=, in-place, errors and grad; t is a view)."""
    return [
        OpInfo("neg", ref=_wrong_for_0_dim, dtypes=("float32",), sample_inputs=_unary),
        OpInfo("abs", ref=lambda a: np.abs(a) + 1, dtypes=("float32",), sample_inputs=_unary),
    ] + passing_opinfos()


def _bad_shape(shape):
    raise ValueError(f"bad shape {shape}")     # the innermost frame a sample-building error must show


def _broken_unary(op, device, dtype, requires_grad=False):
    yield SampleInput(make_tensor((3,), device=device, dtype=dtype, seed=1, requires_grad=requires_grad))
    yield SampleInput(_bad_shape((2, -1)))


def broken_sampler_opinfos():
    """exp, whose sampler raises after its first sample (for every dtype and the gradient samples), and the
    passing entries."""
    return [OpInfo("exp", ref=np.exp, dtypes=("float32", "float64"), sample_inputs=_broken_unary,
                   supports_autograd=True)] + passing_opinfos()

"""The conformance runner's sample cache cannot hand one OpInfo's samples to another: it was keyed by
``id(opinfo)``, and a later run's new OpInfo that got a dead one's id received its samples (a check of
the CLI's counts failed about one run in five under the whole suite)."""
import numpy as np

from ember.testing import OpInfo, SampleInput, make_tensor
from ember.testing.conformance import _runner


def _one(op, device, dtype, requires_grad=False):
    yield SampleInput(make_tensor((2,), device=device, dtype=dtype, seed=1))


def _two(op, device, dtype, requires_grad=False):
    yield SampleInput(make_tensor((3,), device=device, dtype=dtype, seed=2))
    yield SampleInput(make_tensor((), device=device, dtype=dtype, seed=3))


def test_an_entry_under_a_reused_id_is_not_taken_for_another_opinfo():
    a = OpInfo("neg", ref=np.negative, dtypes=("float32",), sample_inputs=_one)
    b = OpInfo("neg", ref=np.negative, dtypes=("float32",), sample_inputs=_two)
    target = _runner.make_target("cpu")
    a_samples = _runner.samples_of(a, target, "float32")
    # what a dead OpInfo's entry looks like to a new object that got its id
    key_a = next(k for k in _runner._SAMPLE_CACHE if k[0] == id(a))
    _runner._SAMPLE_CACHE[(id(b),) + key_a[1:]] = _runner._SAMPLE_CACHE[key_a]
    got = _runner.samples_of(b, target, "float32")
    assert [tuple(s.input.shape) for s in got] == [(3,), ()]
    assert [tuple(s.input.shape) for s in a_samples] == [(2,)]

"""The op tests of the conformance suite (run with ``pytest --pyargs ember.testing.conformance
--ember-device DEVICE``): one test per op for samples and errors, per (op, dtype, sample) for each
of op / out / inplace / view, per (op, sample) for grad. The checks are in ``_runner``."""
from ember.testing.conformance.plugin import run_pytest_case


def test_samples(ember_case, ember_target):
    """The op's samples build for every dtype (an error is reported here, once, with its frame)."""
    run_pytest_case(ember_case, ember_target)


def test_op(ember_case, ember_target):
    """Values, device, dtype and shape against the numpy reference / the cpu result."""
    run_pytest_case(ember_case, ember_target)


def test_out(ember_case, ember_target):
    """``out=`` writes the functional result into the given tensor and returns it."""
    run_pytest_case(ember_case, ember_target)


def test_inplace(ember_case, ember_target):
    """The in-place variant writes the functional result into its input."""
    run_pytest_case(ember_case, ember_target)


def test_view(ember_case, ember_target):
    """View ops share their input's storage; writes go through."""
    run_pytest_case(ember_case, ember_target)


def test_errors(ember_case, ember_target):
    """Each error input raises the declared class with a matching message."""
    run_pytest_case(ember_case, ember_target)


def test_grad(ember_case, ember_target):
    """gradcheck on the device (float64, or float32 with loose tolerances)."""
    run_pytest_case(ember_case, ember_target)


def test_compiled(ember_case, ember_target):
    """The op through ember.compile (warm-up, capture, replays) returns its eager result bit for bit."""
    run_pytest_case(ember_case, ember_target)

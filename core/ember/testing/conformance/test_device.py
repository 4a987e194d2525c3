"""The device-level checks of the conformance suite, one test per check (``_device_checks``)."""
import pytest

from ember.testing.conformance._device_checks import run_device_check
from ember.testing.conformance._runner import ConformanceFailure, NotApplicable


def test_device(ember_device_check, ember_target):
    """Round trips (per dtype), copies, views, allocator statistics, OOM, RNG, synchronize, services,
    save/load, autograd, module smoke runs; ``ember_device_check`` is (check name, dtype or "*")."""
    name, dtype = ember_device_check
    failure = None
    try:
        run_device_check(name, ember_target, dtype)
    except NotApplicable as e:
        pytest.skip(str(e))
    except ConformanceFailure as e:
        failure = str(e)
    if failure is not None:
        pytest.fail(failure, pytrace=False)

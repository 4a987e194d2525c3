"""User-facing errors carry no chained internal exception, and kernels do not print numpy's
floating-point RuntimeWarnings where PyTorch is silent (issue 17, part 7)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import traceback
import warnings

import pytest

import ember

try:
    import torch
except ImportError:
    torch = None

CASES = [
    ("broadcast", lambda m: m.ones(2, 3) + m.ones(4)),
    ("broadcast memoised", lambda m: m.ones(2, 3) + m.ones(4)),          # the same key again: the cache path
    ("sub bool", lambda m: m.ones(2, dtype=m.bool) - m.ones(2, dtype=m.bool)),
    ("unary on a list", lambda m: m.exp([1.0])),
    ("neg bool", lambda m: -m.ones(2, dtype=m.bool)),
    ("matmul shapes", lambda m: m.ones(2, 3) @ m.ones(4, 2)),
    ("matmul non-tensor", lambda m: m.matmul(m.ones(2, 2), [[1.0]])),
    ("mm non-matrix", lambda m: m.mm(m.ones(2), m.ones(2, 2))),
    ("relu on a list", lambda m: m.relu([1.0])),
    ("sum bad dim", lambda m: m.ones(2, 3).sum(5)),
    ("softmax bad dim", lambda m: m.softmax(m.ones(2, 3), 4)),
    ("unknown device", lambda m: m.zeros(2, device="npu")),
    ("view bad shape", lambda m: m.ones(6).view(4, 2)),
]


def _error(lib, fn):
    with pytest.raises(Exception) as ei:
        fn(lib)
    return ei.value


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_no_chained_internal_exception(name, fn):
    e = _error(ember, fn)
    shown = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    assert "During handling of the above exception" not in shown, shown
    assert "The above exception was the direct cause" not in shown, shown
    if torch is not None and name != "unknown device":
        t = _error(torch, fn)
        assert isinstance(e, type(t)) or isinstance(t, type(e)), (type(e), type(t))


def test_kernels_do_not_print_numpy_floating_point_warnings():
    """inf * 0, overflowing casts, x / 0, log of a negative, float64 overflow: IEEE results, no warnings
    (PyTorch prints none), even with every warning turned on (``-W always``) before ember is imported; the
    user's own numpy code still warns. A fresh process, so that no earlier test's warning registry hides one."""
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("always")
        import numpy as np
        import ember
        x = ember.tensor([float("inf"), 1e30, -1.0])
        with warnings.catch_warnings(record=True) as w:        # "always" from before the import stays in force
            r = [x * 0, x.to(ember.int32), x.to(ember.int8), x.to(ember.float16), x / 0, ember.log(x), ember.sqrt(x),
                 x.double() * 1e300 * 1e300, ember.tensor([1e40], dtype=ember.float32), x.exp() * 0, x.pow(1000)]
            print("EMBER", len(w), [str(m.message) for m in w])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            np.ones(1) / 0
            print("NUMPY", len(w))
        print("NAN", bool(ember.isnan(r[0][0])), r[1].tolist()[0])
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "EMBER 0 []" in r.stdout, r.stdout
    assert "NUMPY 1" in r.stdout
    assert "NAN True -2147483648" in r.stdout
    if torch is not None:                  # the same values as PyTorch, which is silent too
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tx = torch.tensor([float("inf"), 1e30, -1.0])
            assert torch.isnan((tx * 0)[0]) and (tx / 0)[0] == float("inf")

"""What the distribution tests share: comparing ember's answers with torch's, side by side."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

PROPERTIES = ("mean", "mode", "variance", "stddev")


class TorchMatch:
    """Assertions that an ember result equals torch's: values (dtype, shape, numbers), a distribution's
    method or property on the same points, and an error (class and message)."""

    @staticmethod
    def close(e, t, what, rtol=1e-9, atol=1e-12):
        """Same dtype name, shape and values (within rtol / atol)."""
        assert isinstance(e, ember.Tensor), (what, type(e))
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (what, e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape), (what, e.shape, t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol, err_msg=what)

    @staticmethod
    def _evaluate(d, what, arg):
        if what in PROPERTIES:
            return getattr(d, what)
        return getattr(d, what)(arg) if arg is not None else getattr(d, what)()

    def method(self, e, t, ev, tv, what):
        """``what`` (a method of METHODS or a property) of ember's ``e`` and torch's ``t``: equal values, or a
        NotImplementedError from both. log_prob / cdf take (ev, tv); icdf takes probabilities 0.05, 0.5, 0.93
        broadcast against the batch."""
        if what == "icdf":
            import torch
            ev, tv = (mod.tensor([0.05, 0.5, 0.93], dtype=mod.float64)[:, None] for mod in (ember, torch))
            if len(t.batch_shape) == 0:
                ev, tv = ev[:, 0], tv[:, 0]
        arg_e, arg_t = (ev, tv) if what in ("log_prob", "cdf", "icdf") else (None, None)
        try:
            expected = self._evaluate(t, what, arg_t)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                self._evaluate(e, what, arg_e)
            return
        got = self._evaluate(e, what, arg_e)
        if isinstance(expected, float):
            assert math.isclose(float(got), expected) or (math.isnan(expected) and math.isnan(float(got)))
            return
        self.close(got, expected, f"{type(t).__name__}.{what}")

    @staticmethod
    def same_error(build, n=None):
        """``build(mod)`` raises in torch and in ember: the same class and message (ember. spelled torch.), up to
        and including "invalid values:" when the message lists them, else up to ``n`` characters (default all)."""
        import torch
        with pytest.raises(Exception) as te:
            build(torch)
        with pytest.raises(Exception) as ee:
            build(ember)
        assert type(ee.value) is type(te.value), (ee.value, te.value)
        e_msg = str(ee.value).replace("ember.", "torch.")
        t_msg = str(te.value)
        if n is None:
            n = t_msg.find("invalid values:") + len("invalid values:") if "invalid values:" in t_msg else len(t_msg)
        assert e_msg[:n] == t_msg[:n], (e_msg, t_msg)


@pytest.fixture
def torch_match():
    """A TorchMatch (the tests that use it import torch themselves, via pytest.importorskip)."""
    return TorchMatch()

"""The plugin's contribution to ember's op database (the ``ember_opinfos`` hook)."""
from __future__ import annotations


def _samples(op, device, dtype, requires_grad):
    from ember.testing import SampleInput, make_tensor

    def mk(shape, **kw):
        return make_tensor(shape, device=device, dtype=dtype, requires_grad=requires_grad, **kw)
    yield SampleInput(mk((3, 4)), (mk((3, 4)), mk((3, 4))), name="same shape")
    yield SampleInput(mk((2, 3, 4)), (mk((4,)), mk((3, 1))), name="broadcast")
    yield SampleInput(mk((3, 4), noncontiguous=True), (mk(()), mk((1, 4))), name="non-contiguous")
    yield SampleInput(mk(()), (mk(()), mk(())), name="0-dim")
    yield SampleInput(mk((0, 4)), (mk((4,)), mk((4,))), name="empty")


def _errors(op, device):
    import ember
    from ember.testing import ErrorInput, SampleInput
    x = ember.ones(2, 3, device=device)
    yield ErrorInput(SampleInput(x, (ember.ones(4, device=device), ember.ones(3, device=device))), RuntimeError,
                     r"must broadcast to self's shape")
    yield ErrorInput(SampleInput(x.int(), (x.int(), x.int())), RuntimeError, r"expected floating tensors")


def _ref(x, s, b):
    """x * s + b rounded once (float16 / bfloat16 in float32), as the kernels compute it."""
    import numpy as np
    f = (lambda a: a.astype(np.float32)) if x.dtype.itemsize == 2 else (lambda a: a)
    return (f(x) * f(s) + f(b)).astype(x.dtype)


def opinfos():
    """The plugin's OpInfo list for the ``ember_opinfos`` hook: ``vdev_fused_scale_shift`` (float16, bfloat16,
    float32, float64 on vdev and cpu), with samples, error inputs, a numpy reference and autograd.
    """
    import ember
    from ember.testing import OpInfo
    floats = ["float16", "bfloat16", "float32", "float64"]
    # the op has kernels for vdev and cpu only: on any other device it is not in the database
    return [OpInfo("vdev_fused_scale_shift", op=ember.ops.vdev.fused_scale_shift,
                   ref=_ref, dtypes=[], dtypes_per_device={"vdev": floats, "cpu": floats},
                   sample_inputs=_samples, error_inputs=_errors, supports_autograd=True)]

"""``device_modules``: module-level smoke runs - a few training steps on the device, compared with cpu.

Op checks test one op at a time; a model chains them, and its backward and optimizer step run ops no
sample asks for (``threshold_backward``, ``max_pool2d_with_indices_backward``, in-place ``addcdiv_``
of Adam, ...). So the check trains two tiny models, on the device and on cpu, from the same initial
weights and the same data, and compares what they become:

- ``mlp``: Linear(8, 16) -> ReLU -> Linear(16, 4), MSE loss, SGD (lr 0.1, momentum 0.9);
- ``cnn``: Conv2d(1, 4, 3) -> ReLU -> ``F.max_pool2d(x, 2)`` (an int kernel_size, as users write it)
  -> flatten -> Linear(36, 3) on 8x8 images, cross-entropy loss, Adam (lr 0.01).

Each runs ``STEPS`` steps (zero_grad, forward, loss, backward, step) on a batch of 4, per dtype in
``SMOKE_TOLERANCES`` the device declares (float32; float64 too). The loss of every step and every
parameter after the last step must match cpu within that dtype's (rtol, atol); each parameter and its
gradient must stay on the device. A failure names the model, dtype, step and what differs.
"""
from __future__ import annotations

import copy

from ._check_common import fail, same
from ._runner import NotApplicable, _value_mismatches, raised_at

__all__ = ["check_modules", "SMOKE_TOLERANCES", "STEPS", "train"]

#: training steps per model
STEPS = 3
#: dtype -> (rtol, atol) for losses and parameters after STEPS steps (a few ops' rounding, compounded)
SMOKE_TOLERANCES = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12)}


def _mlp(nn):
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _cnn(nn):
    import ember
    import ember.nn.functional as F

    class TinyCNN(nn.Module):
        """conv2d 1->4 (k3) -> relu -> max_pool2d(2) -> flatten -> linear, on 1x8x8 images."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3)
            self.fc = nn.Linear(4 * 3 * 3, 3)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            return self.fc(ember.flatten(x, 1))

    return TinyCNN()


def _models():
    """name -> (build(nn), optimizer(params), input shape, loss(out, y), target(seed))."""
    import ember
    import ember.nn.functional as F
    from .._opinfo import make_tensor
    return {
        "mlp": (_mlp, lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9), (4, 8), F.mse_loss,
                lambda dt: make_tensor((4, 4), dtype=dt, seed=21, low=-1, high=1)),
        "cnn": (_cnn, lambda p: ember.optim.Adam(p, lr=0.01), (4, 1, 8, 8), F.cross_entropy,
                lambda dt: ember.tensor([0, 2, 1, 2])),
    }


def train(model, optimizer, x, y, loss_fn, steps=STEPS) -> list:
    """Run ``steps`` steps of (zero_grad, forward, loss, backward, step); the losses, as Python floats.

    :raises _StepError: naming the step and the phase that raised."""
    losses = []
    for step in range(1, steps + 1):
        phase = "zero_grad"
        try:
            optimizer.zero_grad()
            phase = "forward"
            loss = loss_fn(model(x), y)
            phase = "backward"
            loss.backward()
            phase = "optimizer step"
            optimizer.step()
            losses.append(float(loss.item()))
        except Exception as e:  # noqa: BLE001 - reported with the step and phase
            raise _StepError(step, phase, e) from e
    return losses


class _StepError(Exception):
    def __init__(self, step, phase, error):
        self.step, self.phase, self.error = step, phase, error
        super().__init__(f"step {step}, {phase}: {type(error).__name__}: {error}\n  "
                         + raised_at(error).replace("\n", "\n  "))


def _run_one(target, name, dtype_name, problems):
    import ember
    from ember import nn
    from .._opinfo import make_tensor
    build, make_opt, shape, loss_fn, make_y = _models()[name]
    dt = getattr(ember, dtype_name)
    rtol, atol = SMOKE_TOLERANCES[dtype_name]
    label = f"{name} ({dtype_name})"
    ember.manual_seed(0)
    ref = build(nn).to(dt)                      # the initial weights, on cpu
    dev_model = copy.deepcopy(ref).to(target.device)
    x, y = make_tensor(shape, dtype=dt, seed=20, low=-1, high=1), make_y(dt)
    try:
        cpu_losses = train(ref, make_opt(ref.parameters()), x, y, loss_fn)
    except _StepError as e:
        raise NotApplicable(f"{label} does not train on cpu either: {e}") from None
    try:
        got = train(dev_model, make_opt(dev_model.parameters()), x.to(target.device), y.to(target.device), loss_fn)
    except _StepError as e:
        problems.append(f"{label}: training on {target.device} raised at {e}")
        return
    msg = _value_mismatches(got, cpu_losses, rtol, atol, False)
    if msg:
        problems.append(f"{label}: the losses of steps 1..{STEPS} differ from cpu's: {msg}\n"
                        f"    {target.device}: {got}\n    cpu: {cpu_losses}")
    cpu_params = dict(ref.named_parameters())
    for pname, p in dev_model.named_parameters():
        if p.device != target.device or (p.grad is not None and p.grad.device != target.device):
            problems.append(f"{label}: parameter {pname} (or its grad) is on {p.device}, expected {target.device}")
            continue
        bad = same(p, cpu_params[pname], f"{label}: parameter {pname} after {STEPS} steps", rtol, atol)
        if bad:
            problems.append(bad)


def check_modules(target):
    """A tiny MLP (SGD) and CNN (Adam) train for STEPS steps on the device as on cpu: same losses and
    parameters within SMOKE_TOLERANCES (see the module docstring)."""
    dtypes = [d for d in SMOKE_TOLERANCES if d in target.dtypes]
    if not dtypes:
        raise NotApplicable(f"the device is not tested with any of {', '.join(SMOKE_TOLERANCES)}")
    problems = []
    for d in dtypes:
        for name in ("mlp", "cnn"):
            _run_one(target, name, d, problems)
    if problems:
        fail("modules", target, problems)

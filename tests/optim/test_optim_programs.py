"""Small training programs written against PyTorch's API, run unchanged with ``import torch`` and with
``import ember as torch``: the new optimizers (Adafactor, Muon too), schedulers, LBFGS with an autograd
closure and SWA."""
from __future__ import annotations

import pytest

import ember

PROGRAM = '''
import numpy as np
rng = np.random.default_rng(0)
X = torch.tensor(rng.standard_normal((64, 3)))
w_true = torch.tensor([[1.5], [-2.0], [0.5]], dtype=torch.float64)
y = X @ w_true + 0.01 * torch.tensor(rng.standard_normal((64, 1)))
out = {}

def make():
    lin = torch.nn.Linear(3, 1).double()
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[0.1, 0.2, -0.3]]))
        lin.bias.fill_(0.05)
    return lin

def loss_of(model):
    return ((model(X) - y) ** 2).mean()

out["initial"] = loss_of(make()).item()
for name, kw in [("Adadelta", dict(lr=10.0)), ("Adamax", dict(lr=0.2)), ("NAdam", dict(lr=0.1)),
                 ("RAdam", dict(lr=0.2, decoupled_weight_decay=True, weight_decay=0.01)),
                 ("ASGD", dict(lr=0.05, t0=20)), ("Rprop", dict(lr=0.01))]:
    model = make()
    opt = getattr(torch.optim, name)(model.parameters(), **kw)
    for _ in range(80):
        opt.zero_grad()
        loss = loss_of(model)
        loss.backward()
        opt.step()
    out[name] = loss_of(model).item()

model = make()
opt = torch.optim.Adafactor(model.parameters(), lr=0.1)
for _ in range(80):
    opt.zero_grad()
    loss_of(model).backward()
    opt.step()
out["Adafactor"] = loss_of(model).item()

model = make()      # Muon for the 2-D weight, AdamW for the bias (as PyTorch's docs advise)
opts = [torch.optim.Muon([model.weight], lr=0.05, weight_decay=0.0, momentum=0.9),
        torch.optim.AdamW([model.bias], lr=0.05, weight_decay=0.0)]
for t in range(80):
    for o in opts:
        o.zero_grad()
    loss_of(model).backward()
    for o in opts:
        o.step()
out["Muon"] = loss_of(model).item()

model = make()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
sched = torch.optim.lr_scheduler.ChainedScheduler([
    torch.optim.lr_scheduler.CyclicLR(opt, 0.001, 0.05, step_size_up=5),
    torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=60, power=0.5)])
swa = torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9))
lrs = []
for _ in range(50):
    opt.zero_grad()
    loss_of(model).backward()
    opt.step()
    sched.step()
    swa.update_parameters(model)
    lrs.append(opt.param_groups[0]["lr"])
out["cyclic-poly"] = loss_of(model).item()
out["cyclic-poly-lrs"] = lrs
out["ema"] = loss_of(swa).item()

for ls in (None, "strong_wolfe"):
    model = make()
    opt = torch.optim.LBFGS(model.parameters(), lr=1 if ls else 0.3, history_size=5, line_search_fn=ls)

    def closure():
        opt.zero_grad()
        loss = loss_of(model)
        loss.backward()
        return loss
    for _ in range(5):
        opt.step(closure)
    out["lbfgs-" + str(ls)] = loss_of(model).item()
'''


def _run(module):
    scope = {"torch": module}
    exec(PROGRAM, scope)
    return scope["out"]


def test_program_runs_under_ember():
    out = _run(ember)
    for k in ("Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "Adafactor", "Muon", "cyclic-poly", "ema",
              "lbfgs-strong_wolfe", "lbfgs-None"):
        assert out[k] < out["initial"] / 50, k
    assert out["lbfgs-strong_wolfe"] < 1.2e-4      # the least-squares fit (noise variance ~1e-4)
    assert len(set(out["cyclic-poly-lrs"])) > 10


@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")
def test_program_same_as_torch():
    torch = pytest.importorskip("torch")
    got, want = _run(ember), _run(torch)
    assert got["cyclic-poly-lrs"] == want["cyclic-poly-lrs"]
    for k in want:
        if k != "cyclic-poly-lrs":
            # the forward / backward kernels (matmul, mean) round differently from PyTorch's
            assert got[k] == pytest.approx(want[k], rel=1e-6, abs=1e-12), k

"""ember.optim's Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop, SparseAdam and LBFGS: numpy
references of the documented algorithms, hand-checked steps, errors, state_dict round trips,
and float64 trajectories bit-identical to PyTorch's over many steps where torch is installed."""
from __future__ import annotations

import contextlib
import copy
import math

import numpy as np
import pytest

import ember
import ember.optim as optim

SHAPES = [(6, 5), (5,), (3,)]


def _problem(n_steps, seed=0, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(n_steps)]
    return init, grads


def _run_ember(cls, kw, init, grads):
    ps = [ember.tensor(x, requires_grad=True) for x in init]
    opt = cls(ps, **kw)
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = ember.tensor(g)
        opt.step()
    return [p.detach().numpy() for p in ps], opt, ps


# ---------------------------------------------------------------- numpy references (documented algorithms)
def _f32(x):
    return float(np.float32(x))


def ref_adadelta(x, gs, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    v, u = np.zeros_like(x), np.zeros_like(x)
    for g in gs:
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        x = x - lr * delta
    return x


def ref_adamax(x, gs, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    m, u = np.zeros_like(x), np.zeros_like(x)
    for t, g in enumerate(gs, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        m = betas[0] * m + (1 - betas[0]) * g
        u = np.maximum(betas[1] * u, np.abs(g) + eps)
        x = x - lr / (1 - betas[0] ** t) * m / u
    return x


def ref_nadam(x, gs, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
              decoupled_weight_decay=False, maximize=False):
    m, v, mu_prod = np.zeros_like(x), np.zeros_like(x), 1.0
    b1, b2 = betas
    for t, g in enumerate(gs, 1):
        g = -g if maximize else g
        if weight_decay and decoupled_weight_decay:
            x = x * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * x
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        mu_prod = _f32(mu_prod * mu)         # kept in a float32 tensor, as PyTorch
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        x = x - lr * (1 - mu) / (1 - mu_prod) * g / denom - lr * mu_next / (1 - mu_prod * mu_next) * m / denom
    return x


def ref_radam(x, gs, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
              maximize=False):
    m, v = np.zeros_like(x), np.zeros_like(x)
    b1, b2 = betas
    rho_inf = 2 / (1 - b2) - 1
    for t, g in enumerate(gs, 1):
        g = -g if maximize else g
        if weight_decay and decoupled_weight_decay:
            x = x * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            x = x - lr * mhat * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps) * r
        else:
            x = x - lr * mhat
    return x


def ref_asgd(x, gs, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
    eta, mu = _f32(lr), 1.0
    for t, g in enumerate(gs, 1):
        g = -g if maximize else g
        if weight_decay:
            g = g + weight_decay * x
        x = x * (1 - lambd * eta) - eta * g
        eta = _f32(lr / (1 + lambd * lr * t) ** alpha)
        mu = _f32(1 / max(1, t - t0))
    return x


def ref_rprop(x, gs, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    prev, size = np.zeros_like(x), np.full_like(x, lr)
    for g in gs:
        g = -g if maximize else g
        s = np.sign(g * prev)
        size = np.clip(size * np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0)), *step_sizes)
        g = np.where(s < 0, 0.0, g)
        x = x - np.sign(g) * size
        prev = g
    return x


CASES = [
    (optim.Adadelta, ref_adadelta, {}),
    (optim.Adadelta, ref_adadelta, dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    (optim.Adadelta, ref_adadelta, dict(maximize=True)),
    (optim.Adamax, ref_adamax, {}),
    (optim.Adamax, ref_adamax, dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1)),
    (optim.Adamax, ref_adamax, dict(maximize=True, eps=1e-3)),
    (optim.NAdam, ref_nadam, {}),
    (optim.NAdam, ref_nadam, dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    (optim.NAdam, ref_nadam, dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    (optim.RAdam, ref_radam, {}),
    (optim.RAdam, ref_radam, dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    (optim.RAdam, ref_radam, dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    (optim.ASGD, ref_asgd, {}),
    (optim.ASGD, ref_asgd, dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1)),
    (optim.ASGD, ref_asgd, dict(maximize=True, t0=0)),
    (optim.Rprop, ref_rprop, {}),
    (optim.Rprop, ref_rprop, dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    (optim.Rprop, ref_rprop, dict(maximize=True)),
]
IDS = [f"{c.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for c, _, kw in CASES]


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=IDS)
def test_matches_numpy_reference(cls, ref, kw):
    init, grads = _problem(10)
    got, _, _ = _run_ember(cls, kw, init, grads)
    for i, x in enumerate(init):
        want = ref(x, [gs[i] for gs in grads], **kw)
        # NAdam divides by 1 - mu_product (a float32 product close to 1): rounding is amplified there
        np.testing.assert_allclose(got[i], want, rtol=1e-8 if cls is optim.NAdam else 1e-10, atol=1e-12)


def test_asgd_average():
    """ASGD's 'ax' is the parameter until t0 steps, then the running mean of the later iterates."""
    p = ember.tensor([1.0, -1.0], dtype=ember.float64, requires_grad=True)
    opt = optim.ASGD([p], lr=0.1, lambd=0.0, t0=2)
    seen = []
    for g in ([1.0, 2.0], [0.5, -1.0], [2.0, 0.0], [-1.0, 1.0], [0.25, 0.5]):
        p.grad = ember.tensor(g, dtype=ember.float64)
        opt.step()
        seen.append(p.detach().numpy().copy())
    ax = opt.state[p]["ax"].numpy()
    # after step t, mu = 1 / max(1, t - t0) is used by step t + 1: steps 1..4 copy p (mu = 1),
    # step 5 averages with mu = 1/2: ax is the mean of the iterates of steps 4 and 5
    np.testing.assert_allclose(ax, np.mean(seen[3:], axis=0), rtol=1e-15)


def test_hand_checked_single_steps():
    # Adamax's first step: m = (1 - b1) g, u = |g| + eps, p - lr / (1 - b1) * m / u = p - lr * sign(g)
    p = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([4.0, -0.5], dtype=ember.float64)
    optim.Adamax([p], lr=0.1, eps=0.0).step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, -1.9], rtol=0, atol=1e-15)
    # Rprop's first step moves by lr * sign(g)
    p = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([3.0, -0.5, 0.0], dtype=ember.float64)
    optim.Rprop([p], lr=0.25).step()
    assert p.detach().tolist() == [0.75, -1.75, 0.5]
    # RAdam's first steps are un-adapted (rho_t <= 5): p - lr * m / (1 - b1**t) = p - lr * g
    p = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([2.0], dtype=ember.float64)
    optim.RAdam([p], lr=0.5).step()
    assert p.item() == pytest.approx(0.0, abs=1e-15)
    # Adadelta's first step: delta = sqrt(eps) / sqrt((1 - rho) g^2 + eps) * g
    p = ember.tensor([0.0], dtype=ember.float64, requires_grad=True)
    p.grad = ember.tensor([1.0], dtype=ember.float64)
    optim.Adadelta([p], lr=1.0, rho=0.75, eps=0.25).step()
    assert p.item() == pytest.approx(-0.5 / math.sqrt(0.5), rel=1e-15)


def test_state_contents_and_dtypes():
    p = ember.randn(3, 2, requires_grad=True)
    p.grad = ember.randn(3, 2)
    expect = {optim.Adadelta: ["acc_delta", "square_avg", "step"], optim.Adamax: ["exp_avg", "exp_inf", "step"],
              optim.NAdam: ["exp_avg", "exp_avg_sq", "mu_product", "step"],
              optim.RAdam: ["exp_avg", "exp_avg_sq", "step"], optim.ASGD: ["ax", "eta", "mu", "step"],
              optim.Rprop: ["prev", "step", "step_size"]}
    for cls, keys in expect.items():
        opt = cls([p])
        opt.step()
        st = opt.state[p]
        assert sorted(st) == keys, cls
        assert st["step"].dtype is ember.float32 and st["step"].shape == () and st["step"].item() == 1.0
        for k in keys:
            if k not in ("step", "mu_product", "eta", "mu"):
                assert st[k].dtype is ember.float32 and st[k].shape == (3, 2), (cls, k)
    assert not p.grad.requires_grad and p.grad_fn is None


def test_constructor_errors():
    p = ember.zeros(2, requires_grad=True)
    cases = [
        (lambda: optim.Adadelta([p], lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda: optim.Adadelta([p], rho=1.5), "Invalid rho value: 1.5"),
        (lambda: optim.Adadelta([p], eps=-1), "Invalid epsilon value: -1"),
        (lambda: optim.Adadelta([p], weight_decay=-1), "Invalid weight_decay value: -1"),
        (lambda: optim.Adamax([p], lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda: optim.Adamax([p], betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
        (lambda: optim.Adamax([p], betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
        (lambda: optim.NAdam([p], momentum_decay=-1), "Invalid momentum_decay value: -1"),
        (lambda: optim.NAdam([p], eps=-1), "Invalid epsilon value: -1"),
        (lambda: optim.RAdam([p], weight_decay=-1), "Invalid weight_decay value: -1"),
        (lambda: optim.ASGD([p], lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda: optim.ASGD([p], weight_decay=-1), "Invalid weight_decay value: -1"),
        (lambda: optim.Rprop([p], lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda: optim.Rprop([p], etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
        (lambda: optim.Rprop([p], etas=(0.5, 1.0)), "Invalid eta values: 0.5, 1.0"),
        (lambda: optim.SparseAdam([p], lr=0.0), "Invalid learning rate: 0.0"),
        (lambda: optim.SparseAdam([p], eps=0.0), "Invalid epsilon value: 0.0"),
        (lambda: optim.SparseAdam([p], betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
        (lambda: optim.LBFGS([p], lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda: optim.LBFGS([{"params": [p]}, {"params": [ember.zeros(1, requires_grad=True)]}]),
         "LBFGS doesn't support per-parameter options (parameter groups)"),
    ]
    for make, msg in cases:
        with pytest.raises(ValueError) as info:
            make()
        assert str(info.value) == msg


@pytest.mark.parametrize("cls", [optim.Adadelta, optim.Adamax, optim.NAdam, optim.RAdam, optim.ASGD, optim.Rprop])
def test_unsupported_flags_refused(cls):
    p = ember.zeros(2, requires_grad=True)
    if cls is not optim.Adadelta:      # Adadelta's update is written for autograd (tests/optim/test_optim_capturable.py)
        with pytest.raises(RuntimeError, match="`differentiable=True` is not supported"):
            cls([p], differentiable=True)
    opt = cls([p], capturable=True)    # accepted; as in PyTorch, a capturable step refuses cpu parameters
    p.grad = ember.ones(2)
    with pytest.raises(AssertionError, match="^If capturable=True, params.* must be on supported devices: "):
        opt.step()
    with pytest.raises(TypeError):
        cls([p], fused=True)           # none of these has a fused implementation in PyTorch either
    opt = cls([p], foreach=True)       # foreach selects PyTorch's multi-tensor kernels: same results here
    assert opt.param_groups[0]["foreach"] is True


def test_sparse_grads_refused():
    p = ember.zeros(3, requires_grad=True)
    p.grad = ember.ones(3).to_sparse()
    for cls in (optim.Adadelta, optim.Adamax, optim.NAdam, optim.RAdam, optim.ASGD, optim.Rprop):
        with pytest.raises(RuntimeError, match=f"^{cls.__name__} does not support sparse gradients$"):
            cls([p]).step()


# ---------------------------------------------------------------- state_dict
@pytest.mark.parametrize("cls,kw", [(optim.Adadelta, dict(weight_decay=0.1)), (optim.Adamax, dict(lr=0.01)),
                                    (optim.NAdam, dict(decoupled_weight_decay=True, weight_decay=0.1)),
                                    (optim.RAdam, dict(lr=0.01)), (optim.ASGD, dict(t0=3)),
                                    (optim.Rprop, dict(lr=0.1))])
def test_state_dict_round_trip_continues_the_same_trajectory(cls, kw):
    init, grads = _problem(12, seed=3)
    want, _, _ = _run_ember(cls, kw, init, grads)
    mid, opt, ps = _run_ember(cls, kw, init, grads[:5])
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0, 1, 2] and sorted(sd["state"]) == [0, 1, 2]
    ps2 = [ember.tensor(x, requires_grad=True) for x in mid]
    opt2 = cls(ps2, **{**kw, "lr": 123.0})
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kw.get("lr", opt.defaults["lr"])
    for gs in grads[5:]:
        for p, g in zip(ps2, gs):
            p.grad = ember.tensor(g)
        opt2.step()
    for a, b in zip(ps2, want):
        if cls in (optim.NAdam, optim.ASGD):
            # as in PyTorch, loading casts every state tensor but 'step' to the parameter's dtype: the
            # float32 mu_product / eta / mu become float64, so the continuation rounds differently
            np.testing.assert_allclose(a.detach().numpy(), b, rtol=1e-6)
        else:
            np.testing.assert_array_equal(a.detach().numpy(), b)
    if cls is optim.NAdam:
        assert opt2.state[ps2[0]]["mu_product"].dtype is ember.float64
        assert opt2.state[ps2[0]]["step"].dtype is ember.float32


# ---------------------------------------------------------------- against PyTorch (bit for bit)
@contextlib.contextmanager
def _correctly_rounded(torch, reductions=False):
    """PyTorch's float64 cpu sqrt goes through MKL's vector math (about 1% of values 1 ulp off the
    correctly rounded root that IEEE and numpy give); the reference swaps in a correctly rounded
    sqrt so that every other operation of the update is compared bit for bit. With
    ``reductions``, ``dot`` and ``sum`` also use numpy's (BLAS / pairwise) summation order, which
    differs from MKL's in the last bit: LBFGS's scalars come from such reductions."""
    names = ["sqrt", "sqrt_"] + (["dot", "sum"] if reductions else [])
    orig = {n: getattr(torch.Tensor, n) for n in names}
    new = {"sqrt": lambda self: torch.from_numpy(np.asarray(np.sqrt(self.detach().numpy()))),
           "dot": lambda self, other: torch.tensor(np.dot(self.detach().numpy(), other.detach().numpy())),
           "sum": lambda self, *a, **k: (torch.tensor(np.sum(self.detach().numpy())) if not a and not k
                                         else orig["sum"](self, *a, **k))}
    new["sqrt_"] = lambda self: self.copy_(new["sqrt"](self))
    for n in names:
        setattr(torch.Tensor, n, new[n])
    try:
        yield
    finally:
        for n in names:
            setattr(torch.Tensor, n, orig[n])


def _state_equal(tsd, esd):
    assert [{k: v for k, v in g.items() if k != "foreach"} for g in tsd["param_groups"]] == \
        [{k: v for k, v in g.items() if k != "foreach"} for g in esd["param_groups"]]
    assert sorted(tsd["state"]) == sorted(esd["state"])
    for i in tsd["state"]:
        assert sorted(tsd["state"][i]) == sorted(esd["state"][i])
        for k, v in tsd["state"][i].items():
            w = esd["state"][i][k]
            if hasattr(v, "numpy"):
                assert str(v.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], k
                assert (v.numpy() == w.numpy()).all(), k
            else:
                assert v == w, k


TORCH_CASES = [(c, kw) for c, _, kw in CASES] + [
    (optim.ASGD, dict(lr=0.05, lambd=0.01, t0=20, weight_decay=0.1)),
    (optim.Rprop, dict(lr=0.05, etas=(0.5, 1.1), step_sizes=(1e-4, 0.3), maximize=True)),
    (optim.RAdam, dict(lr=0.02, betas=(0.5, 0.6))),
]
TORCH_IDS = [f"{c.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for c, kw in TORCH_CASES]


@pytest.mark.parametrize("cls,kw", TORCH_CASES, ids=TORCH_IDS)
def test_bit_identical_to_torch(cls, kw):
    """60 steps on float64 parameters (one gradient left out at step 3): parameters and every
    state tensor bit-identical to PyTorch's single-tensor (foreach=False) implementation."""
    torch = pytest.importorskip("torch")
    init, grads = _problem(60, seed=11, shapes=[(40, 30), (30,), (7,)])
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    ep = [ember.tensor(x, requires_grad=True) for x in init]
    topt = getattr(torch.optim, cls.__name__)(tp, foreach=False, **kw)
    eopt = cls(ep, **kw)
    with _correctly_rounded(torch):
        for step, gs in enumerate(grads):
            for t, e, g in zip(tp, ep, gs):
                skip = step == 3 and g.ndim == 1
                t.grad = None if skip else torch.tensor(g)
                e.grad = None if skip else ember.tensor(g)
            topt.step()
            eopt.step()
    for t, e in zip(tp, ep):
        assert (t.detach().numpy() == e.detach().numpy()).all()
    _state_equal(topt.state_dict(), eopt.state_dict())


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_torch_state_dict_loads_into_ember(name):
    """A state dict of PyTorch's optimizer, converted tensor by tensor, loaded into ember's and into a
    fresh PyTorch one: the two continue bit for bit."""
    torch = pytest.importorskip("torch")
    init, grads = _problem(20, seed=4)
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    topt = getattr(torch.optim, name)(tp, lr=0.01, foreach=False)
    with _correctly_rounded(torch):
        for gs in grads[:8]:
            for t, g in zip(tp, gs):
                t.grad = torch.tensor(g)
            topt.step()
        tsd = topt.state_dict()
        tp = [torch.tensor(t.detach().numpy(), requires_grad=True) for t in tp]
        topt = getattr(torch.optim, name)(tp, foreach=False)       # both sides load the same state dict
        topt.load_state_dict(tsd)
        esd = {"state": {i: {k: ember.tensor(v.numpy()) for k, v in s.items()} for i, s in tsd["state"].items()},
               "param_groups": tsd["param_groups"]}
        ep = [ember.tensor(t.detach().numpy(), requires_grad=True) for t in tp]
        eopt = getattr(optim, name)(ep)
        eopt.load_state_dict(esd)
        for gs in grads[8:]:
            for t, e, g in zip(tp, ep, gs):
                t.grad, e.grad = torch.tensor(g), ember.tensor(g)
            topt.step()
            eopt.step()
    for t, e in zip(tp, ep):
        assert (t.detach().numpy() == e.detach().numpy()).all()


# ---------------------------------------------------------------- SparseAdam
def _sparse_grads(n_steps, shape, seed, unique=False):
    """Per step: (indices (1 x nnz, unsorted, with duplicates unless ``unique``), values
    (nnz x shape[1])); step 5 has no entries."""
    rng = np.random.default_rng(seed)
    out = []
    for step in range(n_steps):
        nnz = 0 if step == 5 else int(rng.integers(1, shape[0] if unique else 2 * shape[0]))
        idx = rng.permutation(shape[0])[None, :nnz] if unique else rng.integers(0, shape[0], size=(1, nnz))
        out.append((idx, rng.standard_normal((nnz, shape[1]))))
    return out


def _ref_sparse_adam(x, steps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
    m, v = np.zeros_like(x), np.zeros_like(x)
    for t, (idx, vals) in enumerate(steps, 1):
        g = np.zeros_like(x)
        np.add.at(g, idx[0], vals)
        g = -g if maximize else g
        rows = np.unique(idx[0])
        if rows.size == 0:
            continue
        m[rows] = betas[0] * m[rows] + (1 - betas[0]) * g[rows]
        v[rows] = betas[1] * v[rows] + (1 - betas[1]) * g[rows] ** 2
        x[rows] -= lr * math.sqrt(1 - betas[1] ** t) / (1 - betas[0] ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
    return x


@pytest.mark.parametrize("kw", [{}, dict(lr=0.05, betas=(0.8, 0.9), eps=1e-4, maximize=True)])
def test_sparse_adam_matches_reference_and_leaves_other_rows(kw):
    shape = (12, 4)
    x0 = np.random.default_rng(1).standard_normal(shape)
    steps = _sparse_grads(30, shape, seed=2)
    p = ember.tensor(x0, requires_grad=True)
    opt = optim.SparseAdam([p], **kw)
    for idx, vals in steps:
        p.grad = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), shape)
        opt.step()
    want = _ref_sparse_adam(x0.copy(), steps, **kw)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-10, atol=1e-13)
    assert opt.state[p]["step"] == 30 and isinstance(opt.state[p]["step"], int)
    # rows never touched keep their values and zero moments
    touched = np.unique(np.concatenate([i[0] for i, _ in steps]))
    untouched = np.setdiff1d(np.arange(shape[0]), touched)
    assert (p.detach().numpy()[untouched] == x0[untouched]).all()
    assert (opt.state[p]["exp_avg"].numpy()[untouched] == 0).all()


def test_sparse_adam_errors():
    p = ember.zeros(3, requires_grad=True)
    p.grad = ember.ones(3)
    with pytest.raises(RuntimeError, match="^SparseAdam does not support dense gradients, please consider Adam "
                                           "instead$"):
        optim.SparseAdam([p]).step()
    with pytest.raises(ValueError, match=r"^Sparse params at indices \[\[0, 1\]\]: SparseAdam requires dense "
                                         "parameter tensors$"):
        optim.SparseAdam([p, ember.ones(3).to_sparse()])
    with pytest.raises(ValueError, match=r"^Complex params at indices \[\[0, 0\]\]: SparseAdam does not support "
                                         "complex parameters$"):
        optim.SparseAdam([ember.zeros(2, dtype=ember.complex64)])


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_sparse_adam_bit_identical_to_torch():
    """Unique (unsorted) indices: ember-sparse's coalesce sums three or more duplicates in another
    order than PyTorch's, which is the sparse layout's business, not the optimizer's."""
    torch = pytest.importorskip("torch")
    shape = (30, 6)
    x0 = np.random.default_rng(3).standard_normal(shape)
    steps = _sparse_grads(60, shape, seed=4, unique=True)
    tp, ep = torch.tensor(x0, requires_grad=True), ember.tensor(x0, requires_grad=True)
    topt = torch.optim.SparseAdam([tp], lr=0.01, betas=(0.8, 0.95))
    eopt = optim.SparseAdam([ep], lr=0.01, betas=(0.8, 0.95))
    with _correctly_rounded(torch):
        for idx, vals in steps:
            tp.grad = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), shape)
            ep.grad = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), shape)
            topt.step()
            eopt.step()
    assert (tp.detach().numpy() == ep.detach().numpy()).all()
    _state_equal(topt.state_dict(), eopt.state_dict())
    # and a round trip of ember's state dict (copied: state_dict() references the state tensors)
    # continues the same way
    sd = copy.deepcopy(eopt.state_dict())
    ep2 = ember.tensor(ep.detach().numpy(), requires_grad=True)
    eopt2 = optim.SparseAdam([ep2])
    eopt2.load_state_dict(sd)
    idx, vals = steps[7]
    for opt, p in ((eopt, ep), (eopt2, ep2)):
        p.grad = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(vals), shape)
        opt.step()
    assert (ep.detach().numpy() == ep2.detach().numpy()).all()


# ---------------------------------------------------------------- LBFGS
def _least_squares(seed=0, m=12, n=5):
    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((m, n)), rng.standard_normal(m)

    def f_and_grad(x):
        r = A @ x - b
        return 0.5 * float(r @ r), A.T @ r
    return f_and_grad, np.linalg.lstsq(A, b, rcond=None)[0], n


def _rosenbrock(n=2):
    def f_and_grad(x):
        f = float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))
        g = np.zeros_like(x)
        g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
        g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
        return f, g
    return f_and_grad, np.ones(n), n


def _lbfgs_run(fw, opt_cls, problem, x0, n_steps, split=2, **kw):
    """Minimise with ``opt_cls`` over parameters holding x0 split in two tensors; the closure computes the
    loss and gradient in numpy (the same floats for both frameworks) and sets ``.grad``. Returns the
    parameter vector after every step and the optimizer."""
    f_and_grad, _, _ = problem
    ps = [fw.tensor(x0[:split].copy(), requires_grad=True), fw.tensor(x0[split:].copy(), requires_grad=True)]
    opt = opt_cls(ps, **kw)
    calls = []

    def closure():
        opt.zero_grad()
        x = np.concatenate([p.detach().numpy() for p in ps])
        f, g = f_and_grad(x)
        calls.append(x)
        ps[0].grad, ps[1].grad = fw.tensor(g[:split]), fw.tensor(g[split:])
        return fw.tensor(f, dtype=fw.float64)

    path = []
    for _ in range(n_steps):
        opt.step(closure)
        path.append(np.concatenate([p.detach().numpy() for p in ps]))
    return np.array(path), opt, calls


_TIGHT = dict(tolerance_grad=1e-10, tolerance_change=1e-14)     # run to the optimum, not to the default tolerances
LBFGS_CASES = {
    "lstsq-fixed-step": (lambda: _least_squares(), dict(lr=0.5, max_iter=3, history_size=4, **_TIGHT)),
    "lstsq-strong-wolfe": (lambda: _least_squares(1), dict(max_iter=3, max_eval=6, line_search_fn="strong_wolfe",
                                                          **_TIGHT)),
    "rosenbrock-fixed-step": (lambda: _rosenbrock(), dict(lr=0.2, max_iter=5, history_size=10, **_TIGHT)),
    "rosenbrock-strong-wolfe": (lambda: _rosenbrock(), dict(max_iter=3, max_eval=8, history_size=10,
                                                           line_search_fn="strong_wolfe", **_TIGHT)),
    "rosenbrock6-strong-wolfe": (lambda: _rosenbrock(6), dict(max_iter=5, max_eval=12, history_size=5,
                                                             line_search_fn="strong_wolfe", **_TIGHT)),
}


@pytest.mark.parametrize("name", list(LBFGS_CASES))
def test_lbfgs_converges(name):
    make, kw = LBFGS_CASES[name]
    problem = make()
    _, x_star, n = problem
    x0 = np.full(n, -1.2) if "rosenbrock" in name else np.zeros(n)
    path, opt, calls = _lbfgs_run(ember, optim.LBFGS, problem, x0, 60, **kw)
    np.testing.assert_allclose(path[-1], x_star, rtol=0, atol=1e-6)
    st = opt.state[opt.param_groups[0]["params"][0]]
    assert st["func_evals"] == len(calls) and st["n_iter"] >= 60
    assert len(st["old_dirs"]) <= kw.get("history_size", 100)


@pytest.mark.parametrize("name", list(LBFGS_CASES))
def test_lbfgs_bit_identical_to_torch(name):
    """60 steps: every iterate and every closure evaluation point bit-identical to PyTorch's when
    both sum in the same order (numpy's ``dot`` / ``sum`` swapped into PyTorch); without the swap
    the trajectories agree to rounding."""
    torch = pytest.importorskip("torch")
    make, kw = LBFGS_CASES[name]
    problem = make()
    n = problem[2]
    x0 = np.full(n, -1.2) if "rosenbrock" in name else np.zeros(n)
    e_path, eopt, e_calls = _lbfgs_run(ember, optim.LBFGS, problem, x0, 60, **kw)
    with _correctly_rounded(torch, reductions=True):
        t_path, topt, t_calls = _lbfgs_run(torch, torch.optim.LBFGS, problem, x0, 60, **kw)
    assert len(e_calls) == len(t_calls)
    assert (np.array(e_calls) == np.array(t_calls)).all()
    assert (e_path == t_path).all()
    est, tst = (o.state[o.param_groups[0]["params"][0]] for o in (eopt, topt))
    assert sorted(est) == sorted(tst)
    assert est["func_evals"] == tst["func_evals"] and est["n_iter"] == tst["n_iter"]
    assert (est["d"].numpy() == tst["d"].numpy()).all() and float(est["t"]) == float(tst["t"])
    for k in ("old_dirs", "old_stps"):
        assert len(est[k]) == len(tst[k]) and all((a.numpy() == b.numpy()).all() for a, b in zip(est[k], tst[k]))
    assert [float(r) for r in est["ro"]] == [float(r) for r in tst["ro"]]
    # PyTorch's own reductions: the same path to rounding
    t_path2, _, _ = _lbfgs_run(torch, torch.optim.LBFGS, problem, x0, 60, **kw)
    np.testing.assert_allclose(e_path[-1], t_path2[-1], rtol=1e-7, atol=1e-9)


def test_lbfgs_behaviour():
    problem = _least_squares(2)
    f_and_grad = problem[0]
    p = ember.zeros(5, dtype=ember.float64, requires_grad=True)
    opt = optim.LBFGS([p], line_search_fn="strong_wolfe")
    n_calls = 0

    def closure():
        nonlocal n_calls
        n_calls += 1
        assert ember.is_grad_enabled()
        opt.zero_grad()
        f, g = f_and_grad(p.detach().numpy())
        p.grad = ember.tensor(g)
        return ember.tensor(f, dtype=ember.float64)

    first = opt.step(closure)
    assert first.item() == f_and_grad(np.zeros(5))[0]           # the loss at the starting point
    assert n_calls <= 25 and opt.state[p]["func_evals"] == n_calls   # max_eval = max_iter * 5 // 4
    np.testing.assert_allclose(p.detach().numpy(), problem[1], atol=1e-6)
    # already optimal: one evaluation, no move
    p.grad = None
    before, calls_before = p.detach().numpy().copy(), n_calls
    opt2 = optim.LBFGS([p], tolerance_grad=1.0)
    opt2.step(closure)
    assert n_calls == calls_before + 1 and (p.detach().numpy() == before).all()
    with ember.no_grad():
        p.fill_(3.0)                                               # away from the optimum
    with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
        optim.LBFGS([p], line_search_fn="armijo").step(closure)
    assert optim.LBFGS([p]).defaults["max_eval"] == 25 and optim.LBFGS([p], max_iter=7).defaults["max_eval"] == 8
    # a state dict round trip continues the same iterations
    q = ember.zeros(5, dtype=ember.float64, requires_grad=True)
    o = optim.LBFGS([q], max_iter=2, history_size=3)

    def closure_q():
        o.zero_grad()
        f, g = f_and_grad(q.detach().numpy())
        q.grad = ember.tensor(g)
        return ember.tensor(f, dtype=ember.float64)

    for _ in range(3):
        o.step(closure_q)
    sd = copy.deepcopy(o.state_dict())
    q2 = ember.tensor(q.detach().numpy(), requires_grad=True)
    o2 = optim.LBFGS([q2])
    o2.load_state_dict(sd)
    assert o2.param_groups[0]["history_size"] == 3

    def closure_q2():
        o2.zero_grad()
        f, g = f_and_grad(q2.detach().numpy())
        q2.grad = ember.tensor(g)
        return ember.tensor(f, dtype=ember.float64)

    for _ in range(3):
        o.step(closure_q)
        o2.step(closure_q2)
    assert (q.detach().numpy() == q2.detach().numpy()).all()

"""nn.DataParallel over vdev:0 and vdev:1 (issue 24, part 1): PyTorch's semantics, checked against
training on one device (PyTorch itself cannot run DataParallel without CUDA: there it runs the
module as it is, which the cpu cases compare with)."""
from __future__ import annotations

import copy
import collections

import numpy as np
import pytest

import ember
from ember import nn, profiler
from ember.nn.parallel import gather, replicate, scatter, scatter_kwargs

pytest.importorskip("ember_vdev")

DEVS = ["vdev:0", "vdev:1"]


def _mlp(seed=0):
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("batch", [8, 7, 1])
def test_loss_and_gradients_equal_one_device(batch):
    single = _mlp().to("vdev:0")
    dp = nn.DataParallel(copy.deepcopy(single), device_ids=DEVS)
    x = ember.randn(batch, 6, device="vdev:0")
    y = ember.randint(0, 4, (batch,), device="vdev:0")
    with profiler.record_copies() as rec:
        loss_dp = nn.functional.cross_entropy(dp(x), y)
        loss_dp.backward()
    loss_1 = nn.functional.cross_entropy(single(x), y)
    loss_1.backward()
    assert loss_dp.device == ember.device("vdev:0")
    np.testing.assert_allclose(loss_dp.item(), loss_1.item(), rtol=1e-6)
    for (n, p1), p2 in zip(single.named_parameters(), dp.module.parameters()):
        assert p2.grad.device == ember.device("vdev:0"), n
        np.testing.assert_allclose(_np(p2.grad), _np(p1.grad), rtol=1e-5, atol=1e-6, err_msg=n)
    if batch > 1:        # the second replica was used: copies went arena to arena, never through the host
        assert rec.get(("vdev", "vdev", "direct"), 0) > 0
    assert not any(path == "host" for _, _, path in rec)


def test_training_matches_one_device_over_steps():
    single = _mlp(1).to("vdev:0")
    dp = nn.DataParallel(copy.deepcopy(single), device_ids=DEVS)
    opts = [ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (single, dp)]
    g = ember.Generator().manual_seed(3)
    for _ in range(10):
        x = ember.randn(10, 6, generator=g).to("vdev:0")
        y = ember.randint(0, 4, (10,), generator=g).to("vdev:0")
        for model, opt in zip((single, dp), opts):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    for p1, p2 in zip(single.parameters(), dp.module.parameters()):
        np.testing.assert_allclose(_np(p2), _np(p1), rtol=1e-5, atol=1e-6)


def test_module_attribute_and_state_dict_prefix():
    m = _mlp().to("vdev:0")
    dp = nn.DataParallel(m, device_ids=DEVS)
    assert dp.module is m
    assert list(dp.state_dict()) == ["module." + k for k in m.state_dict()]
    assert dp.device_ids == [ember.device("vdev:0"), ember.device("vdev:1")]
    assert dp.output_device == ember.device("vdev:0")


def test_default_device_ids_are_every_device_of_the_modules_type():
    dp = nn.DataParallel(_mlp().to("vdev:0"))
    assert dp.device_ids == [ember.device("vdev:0"), ember.device("vdev:1")]
    cpu_model = _mlp()
    plain = nn.DataParallel(cpu_model)     # as PyTorch without CUDA: the module runs as it is
    assert plain.device_ids == []
    x = ember.randn(3, 6)
    np.testing.assert_array_equal(_np(plain(x)), _np(cpu_model(x)))


def test_cpu_as_one_device_matches_pytorch_on_a_cpu_only_machine():
    torch = pytest.importorskip("torch")
    m = _mlp()
    tm = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    tm.load_state_dict({k: torch.tensor(_np(v)) for k, v in m.state_dict().items()})
    x = ember.randn(5, 6)
    out = nn.DataParallel(m, device_ids=["cpu"])(x)
    tout = torch.nn.DataParallel(tm)(torch.tensor(_np(x)))       # no CUDA: torch runs the module as it is
    np.testing.assert_allclose(_np(out), tout.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_first_replica_shares_buffers_others_are_copies():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5)).to("vdev:0")
    fresh = copy.deepcopy(m)
    dp = nn.DataParallel(m, device_ids=DEVS)
    x = ember.randn(6, 4, device="vdev:0")
    dp(x)
    fresh(x[:3])                       # what the first replica saw (chunk sizes 3 + 3)
    np.testing.assert_allclose(_np(m[1].running_mean), _np(fresh[1].running_mean), rtol=1e-6)
    assert m[1].num_batches_tracked.item() == 1
    reps = replicate(m, DEVS)
    assert reps[0][0].weight is m[0].weight
    assert reps[0][1].running_mean.data_ptr() == m[1].running_mean.data_ptr()      # shares the buffer's memory
    assert reps[1][1].running_mean.device == ember.device("vdev:1")
    assert reps[1][0].weight.device == ember.device("vdev:1") and reps[1][0].weight.grad_fn is not None
    assert getattr(reps[1], "_is_replica", False)


def test_scatter_gather_structures_and_kwargs():
    x = ember.arange(10.).reshape(5, 2)
    parts = scatter((x, "tag", {"k": x}), DEVS)
    assert len(parts) == 2
    assert [tuple(p[0].shape) for p in parts] == [(3, 2), (2, 2)]
    assert [p[0].device for p in parts] == [ember.device(d) for d in DEVS]
    assert parts[1][1] == "tag" and tuple(parts[1][2]["k"].shape) == (2, 2)
    ins, kws = scatter_kwargs((x[:1],), {"scale": 2.0}, DEVS)
    # one row gives one chunk, but the keyword arguments go to every device: the inputs are padded with an
    # empty tuple (PyTorch's scatter_kwargs does the same)
    assert len(ins) == len(kws) == 2 and ins[1] == () and kws[1] == {"scale": 2.0}
    Out = collections.namedtuple("Out", "a b")
    outs = [Out(ember.ones(2, device=d), {"c": ember.zeros(1, device=d)}) for d in DEVS]
    g = gather(outs, "vdev:0")
    assert isinstance(g, Out) and tuple(g.a.shape) == (4,) and g.b["c"].device == ember.device("vdev:0")
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        s = gather([ember.tensor(1., device=d) for d in DEVS], "vdev:1")
    assert tuple(s.shape) == (2,) and s.device == ember.device("vdev:1")


def test_kwargs_tuple_outputs_and_output_device():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)

        def forward(self, x, *, scale=1.0):
            y = self.lin(x) * scale
            return y, y.sum(1)

    m = Two().to("vdev:0")
    x = ember.randn(4, 3, device="vdev:0")
    a, b = nn.DataParallel(m, device_ids=DEVS, output_device="vdev:1")(x, scale=2.0)
    assert a.device == b.device == ember.device("vdev:1")
    want = m(x, scale=2.0)
    np.testing.assert_allclose(_np(a), _np(want[0]), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(b), _np(want[1]), rtol=1e-6, atol=1e-6)
    cpu_out = nn.DataParallel(m, device_ids=DEVS, output_device=-1)(x)[0]
    assert cpu_out.device == ember.device("cpu")


def test_grad_mode_reaches_the_replica_threads():
    dp = nn.DataParallel(_mlp().to("vdev:0"), device_ids=DEVS)
    x = ember.randn(4, 6, device="vdev:0")
    with ember.no_grad():
        out = dp(x)
    assert not out.requires_grad
    assert dp(x).requires_grad


def test_errors():
    m = _mlp()
    with pytest.raises(ValueError, match="one device type"):
        nn.DataParallel(m, device_ids=["vdev:0", "cpu"])
    dp = nn.DataParallel(m, device_ids=DEVS)                   # m is on cpu
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device vdev:0 "
                                           r"\(device_ids\[0\]\) but found one of them on device: cpu"):
        dp(ember.randn(2, 6, device="vdev:0"))

    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            if x.device.index == 1:
                raise ValueError("bad shard")
            return self.lin(x)

    with pytest.raises(ValueError, match=r"Caught ValueError in replica 1 on device vdev:1"):
        nn.DataParallel(Boom().to("vdev:0"), device_ids=DEVS)(ember.randn(4, 2, device="vdev:0"))


def test_digits_main_job_with_data_parallel(capsys):
    from ember.examples.digits import main
    res = main(["--epochs", "2", "--no-progress", "--device", "vdev:0", "--data-parallel", "vdev:0,vdev:1"])
    assert "DataParallel over vdev:0, vdev:1" in capsys.readouterr().out
    one = main(["--epochs", "2", "--no-progress", "--device", "vdev:0"])
    assert abs(res["test_accuracy"] - one["test_accuracy"]) <= 0.02
    np.testing.assert_allclose(res["history"][-1]["train_loss"], one["history"][-1]["train_loss"], rtol=1e-3)

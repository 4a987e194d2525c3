"""One program, run unchanged under ``import torch`` and ``import ember as torch``: the top-level
conveniences (legacy constructors, size varargs, range indexing, tensor flags, accelerator,
backends, random, onnx, hub, utils.data) give the same results."""
import pytest

PROGRAM = '''
import torch.backends.cudnn as cudnn
import torch.utils.data as data

out = {}
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
out["cudnn"] = (cudnn.benchmark, cudnn.deterministic, torch.backends.mps.is_available())
acc = torch.accelerator.current_accelerator(check_available=True)
device = acc if acc is not None else torch.device("cpu")
if torch.accelerator.is_available():
    torch.accelerator.synchronize()
    assert torch.accelerator.device_count() >= 1
    assert torch.accelerator.memory_allocated() >= 0

torch.manual_seed(0)
with torch.random.fork_rng(devices=[]):
    torch.rand(3)
state = torch.random.get_rng_state()
a = torch.rand(2).tolist()
torch.random.set_rng_state(state)
out["rng"] = torch.rand(2).tolist() == a and torch.initial_seed() == 0

x = torch.FloatTensor([[1, 2, 3], [4, 5, 6]])
out["legacy"] = (x.tolist(), x.type(), isinstance(x, torch.FloatTensor), isinstance(x, torch.LongTensor),
                 torch.LongTensor([1.7, -2]).tolist(), tuple(torch.Tensor(2, 3).shape), torch.Tensor().numel())
y = x.to(device)
z = y.new_zeros(2, 3) + y.view(3, 2).permute(1, 0).flip(0, 1).reshape(2, 3)
out["views"] = z.tile(1, 2).repeat(2, 1).cpu().tolist()
out["factories"] = [tuple(f(size=(2, 1)).shape) for f in (torch.zeros, torch.ones, torch.empty, torch.rand)]
out["index"] = (x[range(1)].tolist(), x[:, range(1, 3)].tolist(), x[(slice(None), 1)].tolist(),
                x[[0, 1], [2, 0]].tolist())
out["flags"] = (y.is_cpu == (device.type == "cpu"), x.is_mps, x.is_xpu, x.is_meta, x.is_sparse, x.is_cuda)
out["onnx"] = torch.onnx.is_in_onnx_export()
out["batches"] = list(data.BatchSampler(data.SequentialSampler(range(5)), 2, drop_last=False))
try:
    torch.Tensor([1], dtype=torch.float64)
except TypeError:
    out["error"] = "TypeError"
'''


def _run(module_line):
    scope = {}
    exec(module_line + "\n" + PROGRAM, scope)     # noqa: S102 - the program is this file's own
    return scope["out"]


def test_program_runs_the_same_under_torch_and_ember():
    pytest.importorskip("torch")
    t = _run("import torch")
    e = _run("import ember as torch")
    legacy_t, legacy_e = t.pop("legacy"), e.pop("legacy")
    assert legacy_e[1] == "ember.FloatTensor" and legacy_t[1] == "torch.FloatTensor"
    assert legacy_e[:1] + legacy_e[2:] == legacy_t[:1] + legacy_t[2:]
    assert e == t
    import ember
    import torch
    ember.backends.cudnn.benchmark = torch.backends.cudnn.benchmark = False

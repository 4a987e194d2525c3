"""The "nccl" backend (cupy.cuda.nccl) runs the same collective tests as "mpi" on cuda tensors.
It needs >= 2 GPUs, cupy with NCCL, the ember-cuda plugin and mpiexec (for the NCCL id rendezvous);
otherwise it skips with the reason."""
import re

import pytest

import ember
import ember.distributed as dist

from _dist_launch import mpirun, worker


def _gpus():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no cupy / no driver: no GPU
        return 0


@pytest.mark.skipif(not dist.is_nccl_available(), reason="cupy with NCCL is not installed: the nccl backend "
                                                          "cannot run here")
@pytest.mark.skipif(_gpus() < 2, reason="the nccl backend needs at least 2 GPUs; fewer are visible")
def test_nccl_collectives_under_mpiexec():
    if not ember.cuda.is_available():
        pytest.skip("the ember-cuda plugin is not installed (pip install ember-cuda)")
    rc, out, err = mpirun(2, [worker("_dist_collectives_worker.py"), "nccl"], timeout=300)
    assert rc == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert sorted(int(m) for m in re.findall(r"RANK (\d+)/2 PASSED", out)) == [0, 1], out


def test_nccl_backend_is_registered_for_cuda():
    if not dist.is_backend_available("nccl") and "nccl" not in dist._backend._backends:
        with pytest.raises(ValueError, match="pip install ember-cuda"):
            dist._backend.backend_entry("nccl")
        pytest.skip("ember-cuda (which registers the nccl backend) is not installed")
    e = dist._backend.backend_entry("nccl")
    assert e.devices == ("cuda",)
    if not dist.is_nccl_available():
        with pytest.raises(RuntimeError, match="the 'nccl' backend needs cupy with NCCL"):
            dist.init_process_group("nccl", rank=0, world_size=1, init_method="file:///nonexistent")
        assert not dist.is_initialized()


@pytest.mark.skipif(not dist.is_nccl_available(), reason="cupy with NCCL is not installed: the nccl backend "
                                                          "cannot run here")
@pytest.mark.skipif(_gpus() < 1, reason="the one-GPU nccl smoke test needs a CUDA device; none is visible")
def test_nccl_one_gpu_smoke(tmp_path):
    """The collective API on a one-rank NCCL group (one GPU): every collective runs through NCCL and gives the
    values a world of one must give; async work completes; the group shuts down cleanly."""
    if not ember.cuda.is_available():
        pytest.skip("the ember-cuda plugin is not installed (pip install ember-cuda)")
    dist.init_process_group("nccl", rank=0, world_size=1, init_method=f"file://{tmp_path / 'nccl_id'}")
    try:
        assert dist.get_backend() == "nccl" and dist.get_world_size() == 1 and dist.get_rank() == 0
        x = ember.arange(6, dtype=ember.float32, device="cuda")
        dist.all_reduce(x)
        assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        y = ember.full((4,), 3.0, device="cuda")
        dist.all_reduce(y, op=dist.ReduceOp.MAX)
        assert y.cpu().tolist() == [3.0] * 4
        h = ember.ones(5, dtype=ember.float16, device="cuda")
        work = dist.all_reduce(h, async_op=True)
        work.wait()
        assert work.is_completed() and h.cpu().tolist() == [1.0] * 5
        b = ember.tensor([7, 8, 9], device="cuda")
        dist.broadcast(b, src=0)
        assert b.cpu().tolist() == [7, 8, 9]
        out = ember.empty(3, dtype=ember.int64, device="cuda")
        dist.all_gather_into_tensor(out, b)
        assert out.cpu().tolist() == [7, 8, 9]
        parts = [ember.empty(3, dtype=ember.int64, device="cuda")]
        dist.all_gather(parts, b)
        assert parts[0].cpu().tolist() == [7, 8, 9]
        rs = ember.empty(4, device="cuda")
        dist.reduce_scatter_tensor(rs, ember.arange(4, dtype=ember.float32, device="cuda"))
        assert rs.cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
        dist.barrier()
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()

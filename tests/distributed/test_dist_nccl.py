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

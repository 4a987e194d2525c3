"""ember.multiprocessing: shared-memory reducers, share_memory_, the drop-in module, Hogwild."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp

ROOT = Path(__file__).resolve().parents[2]
needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")


def _roundtrip(obj):
    """Through multiprocessing's pickler in this process (the fd travels through the resource sharer)."""
    return ForkingPickler.loads(ForkingPickler.dumps(obj))


def _open_fds():
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None


# ---------------------------------------------------------------- share_memory_
def test_share_memory_in_place_every_view_sees_it():
    x = ember.arange(6.).reshape(2, 3)
    v = x[:, 1]
    assert v.tolist() == [1., 4.]               # caches v's native view of the old memory
    st = x.untyped_storage()
    assert not x.is_shared() and not st.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and v.is_shared() and x.untyped_storage() is st and st.is_shared()
    assert x.tolist() == [[0., 1., 2.], [3., 4., 5.]]      # the bytes moved with it
    x[1, 1] = 40.
    assert v.tolist() == [1., 40.]                          # the view sees the new memory
    v[0] = 10.
    assert x[0, 1].item() == 10.
    handle = st.handle
    x.share_memory_()                                        # already shared: no-op
    assert st.handle is handle


@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool, ember.complex128, ember.bfloat16],
                         ids=str)
def test_share_memory_keeps_values_every_dtype(dtype):
    t = ember.tensor([1, 0, 3]).to(dtype)
    before = t.to(ember.float64).tolist() if dtype is not ember.complex128 else t.tolist()
    t.share_memory_()
    assert (t.to(ember.float64).tolist() if dtype is not ember.complex128 else t.tolist()) == before


def test_share_memory_empty_and_grad_and_module():
    e = ember.zeros(0).share_memory_()
    assert e.is_shared() and e.numel() == 0
    p = ember.randn(3, requires_grad=True)
    p.share_memory_()
    assert p.is_shared() and p.requires_grad and p.is_leaf
    (p * 2).sum().backward()
    assert p.grad.tolist() == [2., 2., 2.]
    nn = pytest.importorskip("ember.nn")
    m = nn.Linear(3, 2)
    assert m.share_memory() is m and all(q.is_shared() for q in m.parameters())


# ---------------------------------------------------------------- reducers
def test_reducer_moves_storage_to_shared_memory_and_receiver_maps_it():
    t = ember.arange(4.)
    r = _roundtrip(t)
    assert t.is_shared()                        # sending moved it, in place
    assert r.untyped_storage() is t.untyped_storage()       # same memory: one storage per process
    x = ember.arange(12.).reshape(3, 4)
    a, b = _roundtrip([x, x[1:, ::2]])
    assert b.untyped_storage() is a.untyped_storage() and (b.stride(), b.storage_offset()) == ((4, 2), 4)


def test_reducer_keeps_requires_grad_and_refuses_non_leaf():
    a = ember.randn(3, requires_grad=True)
    r = _roundtrip(a)
    assert r.requires_grad and r.is_leaf
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"):
        ForkingPickler.dumps(a * 2)


def test_bare_storage_and_parameter():
    t = ember.ones(3)
    st = _roundtrip(t.untyped_storage())
    assert st is t.untyped_storage() and t.is_shared()
    nn = pytest.importorskip("ember.nn")
    p = nn.Parameter(ember.randn(2))
    q = _roundtrip(p)
    assert type(q) is nn.Parameter and q.requires_grad and q.untyped_storage() is p.untyped_storage()


def test_tensor_subclass_travels_through_shared_memory():
    from test_tensor_pickle import tagged, Tagged
    t = tagged(ember.arange(3.))
    r = _roundtrip(t)
    assert type(r) is Tagged and t.is_shared() and r.untyped_storage() is t.untyped_storage()


def test_no_fd_leak_on_repeated_sends():
    t = ember.ones(8)
    _roundtrip(t)
    n = _open_fds()
    if n is None:
        pytest.skip("no /proc/self/fd")
    for _ in range(20):
        _roundtrip(t)
    assert _open_fds() == n


def test_sharing_strategy_and_drop_in():
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    try:
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
        with pytest.raises(ValueError, match="Invalid sharing strategy"):
            mp.set_sharing_strategy("bogus")
    finally:
        mp.set_sharing_strategy("file_descriptor")
    for name in ("Process", "Queue", "Pipe", "Pool", "Event", "Lock", "get_context", "set_start_method",
                 "cpu_count", "Barrier", "SimpleQueue", "Manager"):
        assert getattr(mp, name) is getattr(multiprocessing, name), name
    assert mp.util is multiprocessing.util


# ---------------------------------------------------------------- across processes
def _child_writes(t, q, back, done):
    t.add_(1)                               # t arrived through shared memory (spawn) or was inherited (fork)
    u = q.get()
    u.mul_(10)
    back.put(u[1:])                         # a view back to the parent
    done.wait()                             # the sender stays alive until its tensors are received


@pytest.mark.parametrize("method", ["spawn", pytest.param("fork", marks=needs_fork)])
def test_writes_in_child_are_seen_by_parent(method):
    ctx = mp.get_context(method)
    t = ember.zeros(3).share_memory_()
    u = ember.ones(4)                       # not shared yet: the queue's reducer shares it
    q, qback, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_child_writes, args=(t, q, qback, done))
    p.start()
    q.put(u)
    back = qback.get(timeout=60)
    done.set()
    p.join(timeout=60)
    assert p.exitcode == 0
    assert t.tolist() == [1., 1., 1.]
    assert u.is_shared() and u.tolist() == [10., 10., 10., 10.]
    assert back.untyped_storage() is u.untyped_storage() and back.storage_offset() == 1


def _fails(i):
    if i == 1:
        raise ValueError(f"worker {i} is unhappy")


@needs_fork
def test_spawn_helper_surfaces_the_childs_traceback():
    with pytest.raises(mp.ProcessRaisedException, match=r"(?s)Process 1 terminated with the following error.*"
                                                         r"ValueError: worker 1 is unhappy"):
        mp.start_processes(_fails, nprocs=2, start_method="fork")
    assert mp.start_processes(lambda i: None, nprocs=2, start_method="fork") is None


def test_no_leaked_shared_memory_warnings_at_exit(tmp_path):
    script = textwrap.dedent("""
        import ember, ember.multiprocessing as mp

        def child(q, done):
            q.put(ember.full((1000,), 2.0))       # shared by the child, mapped by the parent
            done.wait()

        if __name__ == "__main__":
            ctx = mp.get_context("spawn")
            big = ember.ones(1 << 16).share_memory_()
            q, done = ctx.Queue(), ctx.Event()
            p = ctx.Process(target=child, args=(q, done))
            p.start()
            got = q.get(timeout=60)
            done.set()
            p.join()
            assert got.is_shared() and got.sum().item() == 2000.0, got
            print("ok", p.exitcode)
    """)
    path = tmp_path / "share_exit.py"
    path.write_text(script)
    shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    r = subprocess.run([sys.executable, "-W", "error", str(path)], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "0"]
    assert r.stderr == ""                     # no resource_tracker "leaked shared_memory" warnings
    if os.path.isdir("/dev/shm"):
        assert {f for f in set(os.listdir("/dev/shm")) - shm_before if "ember" in f} == set()


# ---------------------------------------------------------------- Hogwild
@pytest.fixture(scope="module")
def hogwild():
    pytest.importorskip("sklearn")
    pytest.importorskip("ember.nn")
    pytest.importorskip("ember.optim")
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import hogwild
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return hogwild


@needs_fork
def test_hogwild_every_workers_updates_land_in_the_shared_model(hogwild):
    from ember.nn.utils import parameters_to_vector
    ember.manual_seed(0)
    X, y, X_test, y_test = hogwild.load_digits_split(0)
    X, y = X[:600], y[:600]
    model = hogwild.make_model(hidden=16).share_memory()
    params = list(model.parameters())
    workers = 2
    initial = parameters_to_vector(params).detach().clone()
    loss0, _ = hogwild.evaluate(model, X_test, y_test)
    steps = ember.zeros(workers, dtype=ember.int64).share_memory_()
    contrib = ember.zeros(workers, initial.numel()).share_memory_()
    ctx = mp.get_context("fork")
    lock = ctx.Lock()
    procs = [ctx.Process(target=hogwild.train, args=(r, model, X, y, workers),
                         kwargs=dict(epochs=3, lr=0.2, batch_size=20, lock=lock, steps=steps, contrib=contrib))
             for r in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * workers
    assert steps.tolist() == [45, 45]                      # 300 samples per shard / 20 per batch * 3 epochs
    per_worker = contrib.abs().sum(1)
    assert (per_worker > 0).all()                          # every worker changed the parameters
    final = parameters_to_vector(params).detach()
    # the shared parameters hold exactly the sum of every worker's updates (none lost, none private)
    np.testing.assert_allclose(final.numpy() - initial.numpy(), contrib.sum(0).numpy(), atol=2e-5)
    loss, acc = hogwild.evaluate(model, X_test, y_test)
    assert loss < loss0 - 1.0 and acc > 0.7


@needs_fork
def test_hogwild_example_runs_lock_free(hogwild, capsys):
    acc = hogwild.main(["--workers", "2", "--epochs", "3", "--start-method", "fork"])
    out = capsys.readouterr().out
    assert "test accuracy" in out and acc > 0.85

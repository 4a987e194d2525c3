"""DataLoader with worker processes (num_workers=2, 'fork' for speed, one 'spawn' run):
results in order, worker errors with the worker's traceback, a killed worker, timeouts,
shutdown, persistent workers, per-worker seeds, worker_init_fn, IterableDataset sharding."""
from __future__ import annotations

import gc
import os
import re
import sys
import time

import pytest

import ember
from ember.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(__file__))
import _data_helpers as H  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="worker tests use the 'fork' start method")


def _loader(ds, **kw):
    kw.setdefault("num_workers", 2)
    kw.setdefault("multiprocessing_context", "fork")
    return DataLoader(ds, **kw)


def _all_exited(workers, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(w.is_alive() for w in workers):
            return True
        time.sleep(0.02)
    return False


def test_workers_give_the_same_batches_in_order():
    ds = H.Squares(11)
    single = [(x.tolist(), y.tolist()) for x, y in DataLoader(ds, batch_size=3)]
    multi = [(x.tolist(), y.tolist()) for x, y in _loader(ds, batch_size=3)]
    assert multi == single and len(multi) == 4
    assert multi[-1][1] == [9, 10] and multi[1][0][0] == [3.0, 9.0]
    dl = _loader(ds, batch_size=3)
    assert dl.prefetch_factor == 2 and len(dl) == 4
    x, y = next(iter(_loader(ds, batch_size=3)))
    assert x.is_shared() and y.is_shared()                       # stacked in shared memory, not copied back
    pids = list(_loader(ds, batch_size=2, collate_fn=H.pid_of_batch))
    assert os.getpid() not in pids and len(set(pids)) == 2       # loaded by two other processes


def test_shuffle_with_generator_matches_single_process():
    ds = TensorDataset(ember.arange(16))

    def order(workers):
        kw = dict(num_workers=workers, multiprocessing_context="fork") if workers else {}
        dl = DataLoader(ds, batch_size=4, shuffle=True, generator=ember.Generator().manual_seed(9), **kw)
        return [b[0].tolist() for b in dl]
    assert order(2) == order(0) == order(2)


def test_in_order_false_returns_everything():
    got = [y.tolist() for _, y in _loader(H.Squares(9), batch_size=2, in_order=False)]
    assert sorted(i for b in got for i in b) == list(range(9))


def test_worker_exception_reraised_with_worker_traceback():
    dl = _loader(H.FailingAt(10), batch_size=2)
    seen = []
    with pytest.raises(ValueError) as info:
        for _, y in dl:
            seen.append(y.tolist())
    msg = str(info.value)
    assert seen == [[0, 1], [2, 3]]                 # batches before the failing one arrive first
    # batch 2 ([4, 5]) is the third task: worker 0 (round robin 0, 1, 0)
    assert msg.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal Traceback (most recent call "
                          "last):\n")
    assert "_data_helpers.py" in msg and "in __getitem__" in msg and msg.rstrip().endswith("ValueError: bad sample 5")


def test_worker_key_error_stays_readable():
    with pytest.raises(KeyError) as info:
        list(_loader(H.KeyErrorAt(6), batch_size=2))
    text = str(info.value)
    assert text.startswith("Caught KeyError in DataLoader worker process 1.\nOriginal Traceback")
    assert "\\n" not in text.splitlines()[0]


def test_worker_init_fn_error_and_unpicklable_batch():
    with pytest.raises(RuntimeError, match=r"Caught RuntimeError in DataLoader worker process [01]\.\nOriginal "
                                           r"Traceback[\s\S]*init failed in [01]"):
        list(_loader(H.Squares(4), batch_size=2, worker_init_fn=H.failing_init))
    # a batch that cannot travel back is reported, not waited for forever
    with pytest.raises(Exception, match=r"Caught \w+ in DataLoader worker process 0"):
        list(_loader(H.Squares(4), batch_size=2, collate_fn=lambda b: (lambda: b)))


def test_killed_worker_raises_runtime_error_naming_it():
    dl = _loader(H.DiesAt(10, at=6), batch_size=2)
    it = iter(dl)
    workers = list(it._workers)
    with pytest.raises(RuntimeError, match=r"^DataLoader worker \(pid\(s\) (\d+)\) exited unexpectedly$") as info:
        for _ in it:
            pass
    pid = int(re.search(r"pid\(s\) (\d+)", str(info.value)).group(1))
    assert pid in [w.pid for w in workers]
    assert next(w for w in workers if w.pid == pid).exitcode == -9
    del it
    gc.collect()
    assert _all_exited(workers)


def test_timeout():
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.1 seconds"):
        next(iter(_loader(H.Slow(2), batch_size=1, timeout=0.1)))


def test_workers_shut_down_after_epoch_and_after_early_break():
    it = iter(_loader(H.Squares(6), batch_size=2))
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    assert len(list(it)) == 3
    assert _all_exited(workers)                      # the epoch ended: workers joined
    it = iter(_loader(H.Squares(40), batch_size=2))
    workers = list(it._workers)
    for i, _ in enumerate(it):
        if i == 1:
            break
    assert all(w.is_alive() for w in workers)
    del it, _
    gc.collect()
    assert _all_exited(workers)                      # the iterator went away: so did its workers


def test_persistent_workers_are_reused_across_epochs():
    dl = _loader(H.WorkerReport(6), batch_size=2, persistent_workers=True, worker_init_fn=H.set_env_init)
    first = list(dl)
    it = dl._iterator
    workers = list(it._workers)
    second = list(dl)
    assert dl._iterator is it and all(w.is_alive() for w in workers)
    pids = {p for b in first for p in b["pid"].tolist()}
    assert pids == {p for b in second for p in b["pid"].tolist()} == {w.pid for w in workers}
    assert [b["index"].tolist() for b in second] == [[0, 1], [2, 3], [4, 5]]
    assert [b["ember"].tolist() for b in first] != [b["ember"].tolist() for b in second]   # RNG state kept
    # breaking out of an epoch early: the next epoch starts cleanly from the beginning
    for _ in dl:
        break
    assert [b["index"].tolist() for b in dl] == [[0, 1], [2, 3], [4, 5]]
    del dl, it, first, second
    gc.collect()
    assert _all_exited(workers)


def test_worker_seeds_and_init_fn():
    def run(seed):
        dl = _loader(H.WorkerReport(4), batch_size=1, worker_init_fn=H.set_env_init,
                     generator=ember.Generator().manual_seed(seed))
        return [{k: (v.tolist() if isinstance(v, ember.Tensor) else v) for k, v in b.items() if k != "pid"}
                for b in dl]
    rows = [{k: v[0] for k, v in b.items()} for b in run(1)]
    by_worker = {r["worker"]: r for r in rows}
    assert set(by_worker) == {0, 1}
    s0, s1 = by_worker[0]["seed"], by_worker[1]["seed"]
    assert s1 == s0 + 1                                   # base_seed + worker_id
    assert all(r["seed"] == r["info_seed"] for r in rows)
    assert by_worker[0]["init"] == "init-0" and by_worker[1]["init"] == "init-1"
    for key in ("ember", "python", "numpy"):              # every random source differs between workers
        assert by_worker[0][key] != by_worker[1][key]
    assert run(1) == run(1)                               # the loader's generator fixes the seeds
    assert run(2)[0]["seed"] != run(1)[0]["seed"]
    # the base seed is drawn from the generator: the same draw as in the main process
    g = ember.Generator().manual_seed(1)
    assert s0 == int(ember.empty((), dtype=ember.int64).random_(generator=g).item())
    assert ember.utils.data.get_worker_info() is None     # in the main process


def test_iterable_dataset_sharded_with_get_worker_info():
    dl = _loader(H.Range(0, 10), batch_size=3)
    batches = [b.tolist() for b in dl]
    # worker 0 has 0..4, worker 1 has 5..9; batches alternate between them
    assert batches == [[0, 1, 2], [5, 6, 7], [3, 4], [8, 9]]
    assert sorted(i for b in batches for i in b) == list(range(10)) and len(dl) == 4
    assert [int(v) for v in _loader(H.Range(0, 6), batch_size=None)] == [0, 3, 1, 4, 2, 5]
    dup = [v for b in _loader(H.UnshardedRange(0, 3), batch_size=2) for v in b.tolist()]
    assert sorted(dup) == [0, 0, 1, 1, 2, 2]              # without sharding each worker yields everything
    assert [b.tolist() for b in _loader(H.Range(0, 10), batch_size=3, drop_last=True)] == [[0, 1, 2], [5, 6, 7]]
    per = _loader(H.Range(0, 4), batch_size=2, persistent_workers=True)
    assert [b.tolist() for b in per] == [b.tolist() for b in per] == [[0, 1], [2, 3]]


def test_spawn_context():
    dl = DataLoader(H.Squares(6), batch_size=3, num_workers=2, multiprocessing_context="spawn")
    assert [y.tolist() for _, y in dl] == [[0, 1, 2], [3, 4, 5]]

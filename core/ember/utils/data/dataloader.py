"""DataLoader: batches from a dataset, in the main process or in worker processes
(matches torch.utils.data.DataLoader).

Single process: the iterator takes the next index (or list of indices) from the
sampler, fetches and collates. With ``num_workers > 0`` it starts worker processes
(``ember.multiprocessing`` when installed, so CPU tensors come back through shared
memory; the standard module otherwise), keeps ``prefetch_factor`` tasks per worker in
flight, hands tasks out round-robin and returns results in sampler order. A worker's
exception is re-raised in the main process with the worker's traceback; a worker that
dies is reported as a RuntimeError naming its pid; workers are shut down when the
iterator ends, is deleted or is garbage collected (persistent workers live as long as
the DataLoader).
"""
from __future__ import annotations

import itertools
import multiprocessing as _std_mp
import os
import queue
import time
import warnings

import ember
from ember import _registry
from . import _worker
from ._collate import default_collate, default_convert
from ._pin_memory import pin_memory as _pin_batch
from .dataset import IterableDataset
from .sampler import Sampler, SequentialSampler, RandomSampler, BatchSampler

__all__ = ["DataLoader"]

#: seconds the main process waits for a worker to exit before terminating it
_JOIN_TIMEOUT = 5.0


def _mp_module():
    """``ember.multiprocessing`` (tensors through shared memory) when it is there, else ``multiprocessing``."""
    try:
        from ember import multiprocessing as emp
    except ImportError:
        return _std_mp
    return emp if hasattr(emp, "get_context") else _std_mp


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: None forever (the dataset decides when to stop)."""

    def __iter__(self):
        while True:
            yield None


def _usable_cpu_count():
    try:
        return len(os.sched_getaffinity(0)), True
    except AttributeError:      # pragma: no cover - not Linux
        return os.cpu_count(), False


class DataLoader:
    """Iterate over ``dataset`` in batches (matches torch.utils.data.DataLoader; same
    signature and defaults).

    :param dataset: a map-style ``Dataset`` (``__getitem__`` + ``__len__``) or an
        ``IterableDataset``.
    :param batch_size: samples per batch (default 1); None turns batching off (each
        sample is passed through ``collate_fn``, by default ``default_convert``).
    :param shuffle: a new random order each epoch (``RandomSampler`` drawing from
        ``generator``: the same seed gives the same batches). Map-style datasets only.
    :param sampler: an iterable of indices (exclusive with ``shuffle``).
    :param batch_sampler: an iterable of index lists (exclusive with ``batch_size``,
        ``shuffle``, ``sampler`` and ``drop_last``).
    :param num_workers: worker processes (0: load in the main process).
    :param collate_fn: list of samples -> batch (default ``default_collate``).
    :param pin_memory: put batches in page-locked memory of the current accelerator
        (``Tensor.pin_memory``); warns and goes on without when none can pin.
    :param drop_last: drop the last, incomplete batch.
    :param timeout: seconds to wait for a batch from the workers (0: forever);
        RuntimeError "DataLoader timed out after N seconds" past it.
    :param worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker after
        seeding, before loading.
    :param multiprocessing_context: a start method name ("fork", "spawn",
        "forkserver") or a context object.
    :param generator: the ``ember.Generator`` for ``RandomSampler`` and for the
        workers' ``base_seed`` (worker i is seeded with base_seed + i).
    :param prefetch_factor: batches each worker loads ahead (default 2 with workers;
        ValueError if given with ``num_workers=0``).
    :param persistent_workers: keep the workers (and their dataset copies) between
        epochs.
    :param pin_memory_device: deprecated, as in PyTorch: the current accelerator is used.
    :param in_order: with workers, return batches in sampler order (True) or as they come.

    Errors: ValueError for inconsistent options, with PyTorch's messages; a worker's
    exception is re-raised as the same type, "Caught ValueError in DataLoader worker
    process 0.\\nOriginal Traceback (most recent call last): ..."; a worker that exits
    unexpectedly raises RuntimeError "DataLoader worker (pid(s) ...) exited unexpectedly".
    """

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        # iterable-style datasets choose their own order: no sampler, no shuffle
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._IterableDataset_len_called = None
        self._iterator = None
        self._initialized = True
        self.check_worker_number_rationality()

    # ---------------------------------------------------------------- options
    @property
    def multiprocessing_context(self):
        """The multiprocessing context workers start in (None: the platform default)."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        """Set the context worker processes start from (a start-method name or a context); ValueError with
        num_workers=0 or an unknown method, TypeError for another object.
        """
        if context is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                mp = _mp_module()
                methods = mp.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = mp.get_context(context)
            if not isinstance(context, _std_mp.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        self._multiprocessing_context = context

    def __setattr__(self, name, value):
        if self._initialized and name in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # what the iterator draws from: lists of indices when batching, single indices otherwise
        return self.batch_sampler if self._auto_collation else self.sampler

    # ---------------------------------------------------------------- iteration
    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessIter(self)

    def __iter__(self):
        # persistent workers: one iterator for the DataLoader's life, reset each epoch (a new
        # one only if a worker died and took the last one down)
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None or self._iterator._shutdown:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        """Batches per epoch: ``len(batch_sampler)`` (or ``len(sampler)`` without batching);
        for an IterableDataset, ``len(dataset)`` divided by ``batch_size`` (rounded down with
        ``drop_last``, up otherwise). TypeError when the dataset has no length."""
        if not self._iterable:
            return len(self._index_sampler)
        n = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def check_worker_number_rationality(self):
        """Warn when ``num_workers`` exceeds the CPUs this process may use (as PyTorch)."""
        if not self.num_workers:
            return
        suggest, cpuset_checked = _usable_cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            advice = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            note = "" if cpuset_checked else " (`cpuset` is not taken into account)"
            advice = (f"Our suggested max number of worker in current system is {suggest}{note}, which is smaller "
                      f"than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {advice} Please "
                      f"be aware that excessive worker creation might get DataLoader running slow or even freeze, "
                      f"lower the worker number to avoid potential slowness/freeze if necessary.", stacklevel=2)


# ---------------------------------------------------------------- iterators
def _pinning_device(loader):
    """The accelerator type batches are pinned for, or None (warning why, as PyTorch)."""
    if not loader.pin_memory:
        return None
    if loader.pin_memory_device:
        warnings.warn(f"pin_memory_device is deprecated, the current accelerator will be used as the device,ignore "
                      f"pin_memory_device='{loader.pin_memory_device}'.", stacklevel=4)
    kind = _registry.default_accelerator_type()
    if kind == "cpu":
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory "
                      "won't be used.", stacklevel=4)
        return None
    if "pinned_memory" not in _registry.device_type(kind).runtime.services:
        warnings.warn(f"'pin_memory' argument is set as true but not supported on {kind} now, device pinned memory "
                      f"won't be used.", stacklevel=4)
        return None
    return kind


class _BaseIter:
    """What both iterators share: the sampler pass, pinning, the workers' base seed, and
    the IterableDataset length check."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._pin_device = _pinning_device(loader)
        self._sampler_iter = iter(self._index_sampler)
        self._len_reported = loader._IterableDataset_len_called
        # drawn from the loader's generator on every new iterator (as PyTorch), even without workers
        self._base_seed = int(ember.empty((), dtype=ember.int64).random_(generator=loader.generator).item())
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._len_reported = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)          # StopIteration ends the epoch

    def _pin(self, data):
        return data if self._pin_device is None else _pin_batch(data, self._pin_device)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._iterable and self._len_reported is not None and self._num_yielded > self._len_reported:
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {self._len_reported}(when "
                   f"accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = _worker.make_fetcher(self._iterable, self._dataset, self._auto_collation,
                                             self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._pin(self._fetcher.fetch(index))    # an exhausted IterableDataset raises StopIteration


class _MultiProcessIter(_BaseIter):
    """Loading in ``num_workers`` processes.

    Bookkeeping (task = one index list sent to one worker, numbered by ``_send_idx``):
    ``_pending`` maps each unanswered task to its worker, ``_early`` holds results that
    came before their turn, ``_rcvd_idx`` is the next task to return. A task whose worker
    has stopped (its IterableDataset ended) will never be answered and is skipped.
    """

    def __init__(self, loader):
        super().__init__(loader)
        self._shutdown = False
        self._workers, self._index_queues = [], []
        self._prefetch_factor = loader.prefetch_factor
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or _mp_module()
        self._data_queue = ctx.Queue()
        self._done_event = ctx.Event()
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()          # never block exit on undelivered indices
                w = ctx.Process(target=_worker.worker_loop, daemon=True,
                                args=(self._iterable, self._dataset, index_queue, self._data_queue,
                                      self._done_event, self._auto_collation, self._collate_fn, self._drop_last,
                                      self._base_seed, loader.worker_init_fn, i, self._num_workers))
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._pending = {}
        self._early = {}
        self._tasks_outstanding = 0
        self._worker_active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))   # each epoch starts at worker 0
        if not first_iter:
            # persistent workers: start a new epoch in each, and drop answers to the last
            # epoch's unfinished tasks, which come before the acknowledgements
            for q in self._index_queues:
                q.put(_worker._ResumeIteration())
            waiting = self._num_workers
            while waiting:
                tag, _ = self._get_data()
                if isinstance(tag, _worker._ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        if self._tasks_outstanding >= self._prefetch_factor * self._num_workers:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            w = next(self._worker_cycle)
            if self._worker_active[w]:
                break
        else:
            return                                   # every worker's IterableDataset has ended
        self._index_queues[w].put((self._send_idx, index))
        self._pending[self._send_idx] = w
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """The next (task_idx, data) from any worker; RuntimeError when a worker died or the timeout passed."""
        waited = 0.0
        while True:
            wait = _worker.POLL_INTERVAL
            if self._timeout > 0:
                wait = min(wait, self._timeout - waited)
            try:
                payload = self._data_queue.get(timeout=max(wait, 0.0))
            except queue.Empty as e:
                waited += wait
                self._raise_if_a_worker_died(e)
                if self._timeout > 0 and waited >= self._timeout:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from e
                continue
            try:
                return _worker.decode(payload)
            except Exception as e:                     # a batch that could not be received: its sender
                self._raise_if_a_worker_died(e, grace=1.0)   # died before its shared memory was mapped,
                raise                                    # or something else, re-raised as it is

    def _raise_if_a_worker_died(self, cause, grace=0.0):
        """RuntimeError naming the workers that exited (PyTorch's message), after shutting the rest
        down; nothing when all are alive. ``grace``: seconds to let a dying worker finish exiting."""
        deadline = time.monotonic() + grace
        while True:
            dead = [i for i, w in enumerate(self._workers) if self._worker_active[i] and not w.is_alive()]
            if dead or time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        if not dead:
            return
        for i in dead:
            self._worker_active[i] = False
        pids = ", ".join(str(self._workers[i].pid) for i in dead)
        self._shutdown_workers()                       # its tasks are lost: this iterator cannot go on
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from cause

    def _next_data(self):
        while True:
            # skip tasks already returned (out of order) or lost with a stopped worker
            while self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._early:
                w = self._pending.get(self._rcvd_idx)
                if w is not None and self._worker_active[w]:
                    break                                # still to come
                if w is not None:                        # its worker stopped: never answered
                    del self._pending[self._rcvd_idx]
                    self._tasks_outstanding -= 1
                self._rcvd_idx += 1
            if self._rcvd_idx >= self._send_idx:         # nothing left in flight: the epoch is over
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if self._rcvd_idx in self._early:
                data = self._early.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process(data)
            idx, data = self._get_data()
            if isinstance(idx, _worker._ResumeIteration):
                continue
            if self._pending.pop(idx, None) is not None:
                self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._stop_worker(data.worker_id)
                self._try_put_index()
                continue
            if idx == self._rcvd_idx:
                self._rcvd_idx += 1
                return self._process(data)
            if self._in_order:
                self._early[idx] = data
            else:
                return self._process(data)      # skipped later by the loop above (no longer pending)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return self._pin(data)

    def _stop_worker(self, worker_id):
        # its IterableDataset copy has ended; a persistent worker stays for the next epoch
        self._worker_active[worker_id] = False
        if not self._persistent_workers:
            self._index_queues[worker_id].put(None)

    def _shutdown_workers(self):
        """Stop every worker: signal, ask, wait a little, then terminate; close the queues."""
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for q, w in zip(self._index_queues, self._workers):
                if w.is_alive():
                    q.put(None)
            for w in self._workers:
                w.join(timeout=_JOIN_TIMEOUT)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._data_queue.cancel_join_thread()
            self._data_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_JOIN_TIMEOUT)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:       # interpreter shutdown: modules may already be gone
            pass

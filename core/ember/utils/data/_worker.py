"""What runs inside a DataLoader worker process, and what the worker tells the main
process (match torch.utils.data.get_worker_info and the worker protocol's behaviour).

Protocol, per worker: the main process puts ``(task_idx, index)`` on the worker's own
index queue; the worker answers on the shared result queue with the pickled bytes of
``(task_idx, batch)`` where batch is the collated data, an ``ExceptionWrapper`` (the
fetch raised) or ``_IterableDatasetStopIteration`` (its copy of an IterableDataset is
exhausted). ``None`` on the index queue ends the worker; ``_ResumeIteration`` starts a
new epoch for a persistent worker, which acknowledges it on the result queue.
"""
from __future__ import annotations

import dataclasses
import os
import pickle
import queue
import random
import signal
import sys
import traceback
from multiprocessing.reduction import ForkingPickler

__all__ = ["WorkerInfo", "get_worker_info"]

#: seconds the main process waits on the result queue before checking that the workers are alive
POLL_INTERVAL = 0.5
#: seconds an idle worker waits on its index queue before checking the done event and its parent
#: (the done event alone ends it when the ``None`` sent at shutdown cannot arrive: an iterator
#: collected by the garbage collector may have had its queues' feeder threads finalized first)
WORKER_POLL_INTERVAL = 0.1


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker (matches
    torch.utils.data.WorkerInfo): ``id`` (0 .. num_workers - 1), ``num_workers``,
    ``seed`` (the seed this worker's generators were seeded with: base_seed + id) and
    ``dataset`` (this worker's copy). Read-only: assigning raises
    dataclasses.FrozenInstanceError."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info = None


def get_worker_info():
    """The current worker's ``WorkerInfo``, or None in the main process (matches
    torch.utils.data.get_worker_info). Use it in ``IterableDataset.__iter__`` or
    ``worker_init_fn`` to give each worker its share of the data."""
    return _worker_info


class _KeyErrorMessage(str):
    """KeyError shows ``repr`` of its argument; this keeps a multi-line message readable."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process as its type and
    formatted traceback (the traceback object itself cannot be pickled)."""

    def __init__(self, exc_info=None, where="in background"):
        exc_type, exc, tb = exc_info if exc_info is not None else sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        """Raise the worker's exception type in this process with the message
        "Caught <Type> <where>.\\nOriginal Traceback (most recent call last): ..."; a
        RuntimeError with that message when the type cannot be built from one string."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


@dataclasses.dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's copy of an IterableDataset is exhausted."""
    worker_id: int


@dataclasses.dataclass(frozen=True)
class _ResumeIteration:
    """Start a new epoch in a persistent worker (sent on the index queue, echoed back)."""


# ---------------------------------------------------------------- fetchers (also used by num_workers=0)
class _MapFetcher:
    """Fetches one sample (no batching) or one batch of a map-style dataset."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.getitems = getattr(dataset, "__getitems__", None) if auto_collation else None

    def fetch(self, index):
        if self.auto_collation:
            data = self.getitems(index) if callable(self.getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableFetcher:
    """Takes the next sample, or the next ``len(index)`` samples, from an IterableDataset.
    Raises StopIteration when nothing is left (or, with drop_last, only a partial batch)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    """The fetcher that turns indices into batches: iterable-style or map-style, per ``iterable``."""
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


# ---------------------------------------------------------------- the worker process
def _seed_worker(seed: int, base_seed: int, worker_id: int) -> None:
    """Seed Python's ``random``, ember's generators and numpy's global state for one worker."""
    import ember
    random.seed(seed)
    ember.manual_seed(seed)
    try:
        import numpy as np
    except ImportError:       # pragma: no cover - numpy is a dependency of the cpu plugin
        return
    # numpy takes 32-bit words: derive them from (base_seed, worker_id) so workers differ
    np.random.seed(np.random.SeedSequence([base_seed, worker_id]).generate_state(4))


def shared_transport() -> bool:
    """Whether CPU tensors pickled here travel through shared memory (``ember.multiprocessing``
    registers reducers that move their storages there)."""
    emp = sys.modules.get("ember.multiprocessing")
    return emp is not None and hasattr(emp, "get_context")


def _encode(item) -> bytes:
    # pickled here, not in the queue's feeder thread: a batch that cannot be pickled is
    # then reported to the main process instead of leaving it waiting forever
    return bytes(ForkingPickler.dumps(item))


def worker_loop(iterable, dataset, index_queue, result_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers):
    """The body of worker process ``worker_id`` (see the module docstring for the protocol)."""
    global _worker_info
    # Ctrl-C goes to the whole process group; the main process decides and shuts workers down
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    where = f"in DataLoader worker process {worker_id}"
    try:        # its reducers send batches back through shared memory (imported already under 'fork')
        import ember.multiprocessing  # noqa: F401
    except ImportError:
        pass
    seed = base_seed + worker_id
    _seed_worker(seed, base_seed, worker_id)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

    init_error = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(where=where)

    parent = os.getppid()
    exhausted = False                 # this worker's IterableDataset copy has ended
    while True:
        try:
            msg = index_queue.get(timeout=WORKER_POLL_INTERVAL)
        except queue.Empty:
            if done_event.is_set() or os.getppid() != parent:    # shut down, or nobody left to read
                break
            continue
        if msg is None:
            break
        if isinstance(msg, _ResumeIteration):
            if iterable and init_error is None:
                fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
            exhausted = False
            result_queue.put(_encode((msg, None)))
            continue
        if done_event.is_set() or exhausted:
            continue                              # shutting down, or nothing left to give
        task_idx, index = msg
        if init_error is not None:
            data = init_error
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                if not iterable:
                    data = ExceptionWrapper(where=where)
                else:
                    data = _IterableDatasetStopIteration(worker_id)
                    exhausted = True
            except Exception:
                data = ExceptionWrapper(where=where)
        try:
            payload = _encode((task_idx, data))
        except Exception:
            payload = _encode((task_idx, ExceptionWrapper(where=where)))
        del data
        result_queue.put(payload)
    if done_event.is_set():
        # the main process is not reading any more: do not wait to flush the queue at exit
        result_queue.cancel_join_thread()
    result_queue.close()


def decode(payload: bytes):
    """The main process's side of ``_encode``."""
    return pickle.loads(payload)

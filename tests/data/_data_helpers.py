"""Datasets and worker functions for the DataLoader tests, at module level so that
worker processes started with 'spawn' can import them."""
from __future__ import annotations

import os
import random
import signal
import time

import numpy as np

import ember
from ember.utils.data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    """Sample i is (tensor([i, i*i]) float32, i)."""

    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return ember.tensor([float(i), float(i * i)]), i


class FailingAt(Squares):
    """Raises ValueError("bad sample 5") for sample 5."""

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        return super().__getitem__(i)


class KeyErrorAt(Squares):
    def __getitem__(self, i):
        if i == 3:
            raise KeyError("missing\nkey")
        return super().__getitem__(i)


class DiesAt(Squares):
    """The worker that loads sample ``at`` kills itself with SIGKILL."""

    def __init__(self, n=10, at=6):
        super().__init__(n)
        self.at = at

    def __getitem__(self, i):
        if i == self.at and get_worker_info() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


class Slow(Squares):
    def __getitem__(self, i):
        time.sleep(0.3)
        return super().__getitem__(i)


class WorkerReport(Dataset):
    """Sample i reports who loaded it and what the worker's random sources give."""

    def __init__(self, n=8):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        return {"index": i, "pid": os.getpid(), "worker": -1 if info is None else info.id,
                "seed": ember.initial_seed(), "info_seed": -1 if info is None else info.seed,
                "ember": float(ember.rand(1).item()), "python": random.random(),
                "numpy": float(np.random.rand()), "init": os.environ.get("EMBER_TEST_INIT", "")}


class Range(IterableDataset):
    """range(start, end), split between workers by get_worker_info (contiguous shards)."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __len__(self):
        return self.end - self.start

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.end))
        per = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


class UnshardedRange(Range):
    """Every worker yields the whole range."""

    def __iter__(self):
        return iter(range(self.start, self.end))


def set_env_init(worker_id):
    os.environ["EMBER_TEST_INIT"] = f"init-{worker_id}"


def failing_init(worker_id):
    raise RuntimeError(f"init failed in {worker_id}")


def pid_of_batch(batch):
    return os.getpid()

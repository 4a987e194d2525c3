"""DistributedSampler: each rank's share of a dataset's indices (matches
torch.utils.data.distributed.DistributedSampler, index for index).

The shuffled order is PyTorch's: ``torch.randperm(len(dataset))`` drawn from a generator
seeded with ``seed + epoch``. PyTorch's cpu randperm is a Fisher-Yates pass driven by
mt19937 32-bit outputs (``z = random() % (n - i)``, swap ``i`` and ``i + z``); ember draws
the same outputs from numpy's MT19937 (seeded the way PyTorch seeds it: the low 32 bits
of the seed), so ``ember`` and ``torch`` ranks given the same arguments read the same
samples. (ember's own ``ember.randperm`` uses ember's generator, whose stream differs.)
"""
from __future__ import annotations

import math

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _torch_randperm(n: int, seed: int) -> list:
    """The permutation ``torch.randperm(n, generator=torch.Generator().manual_seed(seed))`` returns
    (for n < 2**32 / 20, the range where PyTorch uses 32-bit draws)."""
    if n >= (2 ** 32 - 1) // 20:
        raise ValueError(f"DistributedSampler: datasets of {n} samples are larger than ember reproduces "
                         f"PyTorch's shuffle for (< {(2 ** 32 - 1) // 20})")
    bg = np.random.MT19937()
    bg._legacy_seeding(seed & 0xFFFFFFFF)          # PyTorch's mt19937 takes the seed's low 32 bits
    draws = bg.random_raw(max(n - 1, 0))            # raw 32-bit outputs, in order
    span = np.arange(n, 1, -1, dtype=np.uint64)    # n - i for i = 0 .. n-2
    z = (draws % span).astype(np.int64) + np.arange(n - 1, dtype=np.int64) if n > 1 else []
    r = list(range(n))
    for i, j in enumerate(z.tolist() if n > 1 else ()):     # the swaps are sequential (Fisher-Yates)
        r[i], r[j] = r[j], r[i]
    return r


class DistributedSampler(Sampler):
    """Restricts data loading to this rank's subset of ``dataset`` (matches
    torch.utils.data.distributed.DistributedSampler).

    :param dataset: a map-style dataset (``len`` is used).
    :param num_replicas: number of ranks (default: ``ember.distributed.get_world_size()``).
    :param rank: this rank (default: ``ember.distributed.get_rank()``).
    :param shuffle: permute the indices each epoch (seeded by ``seed + epoch``; call
        ``set_epoch`` before each epoch, or every epoch repeats the same order).
    :param seed: the shuffle's seed; must be the same on every rank.
    :param drop_last: drop the tail so every rank gets the same number of samples without
        padding; otherwise the indices are padded by repeating the first ones.
    :raises ValueError: "Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]".
    :raises RuntimeError: when num_replicas / rank are not given and no process group is initialised
        ("Requires distributed package to be available").

    Each rank yields ``num_samples`` indices: ``indices[rank::num_replicas]``.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if not dist.is_initialized():
                raise RuntimeError("Requires distributed package to be available")
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        indices = _torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch for the next pass (the shuffle's seed is ``seed + epoch``)."""
        self.epoch = epoch

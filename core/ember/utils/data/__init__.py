"""ember.utils.data: datasets, samplers and the DataLoader (matches torch.utils.data).

- ``dataset.py``: Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset,
  ChainDataset, Subset, random_split;
- ``sampler.py``: Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler,
  WeightedRandomSampler, BatchSampler;
- ``_collate.py``: default_collate, default_convert;
- ``dataloader.py``: DataLoader (worker processes in ``_worker.py``);
- ``get_worker_info`` / ``WorkerInfo``: which worker this is, inside a worker.
"""
from __future__ import annotations

from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset, ChainDataset, Subset,
                      random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
                      BatchSampler)
from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from . import distributed  # noqa: F401 - torch.utils.data.distributed
from .distributed import DistributedSampler

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "default_collate", "default_convert", "WorkerInfo",
           "get_worker_info", "DataLoader", "DistributedSampler"]

"""ember.nn.parallel: DistributedDataParallel (matches torch.nn.parallel)."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]

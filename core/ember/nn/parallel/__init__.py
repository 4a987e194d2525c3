"""ember.nn.parallel: DataParallel and DistributedDataParallel, with DataParallel's building blocks
(matches torch.nn.parallel)."""
from .data_parallel import (DataParallel, data_parallel, gather, parallel_apply, replicate, scatter,
                            scatter_kwargs)
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather", "parallel_apply", "replicate",
           "scatter", "scatter_kwargs"]

"""ember.nn.parallel: DataParallel, DistributedDataParallel and Pipe, with DataParallel's building blocks
(matches torch.nn.parallel)."""
from .data_parallel import (DataParallel, data_parallel, gather, parallel_apply, replicate, scatter,
                            scatter_kwargs)
from .distributed import DistributedDataParallel
from .pipe import Pipe

__all__ = ["DataParallel", "DistributedDataParallel", "Pipe", "data_parallel", "gather", "parallel_apply", "replicate",
           "scatter", "scatter_kwargs"]

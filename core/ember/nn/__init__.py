"""ember.nn: modules, parameters, layers, losses, functional, init, utils (matches torch.nn)."""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import functional  # noqa: F401
from . import init  # noqa: F401
from . import utils  # noqa: F401
from . import parallel  # noqa: F401 - ember.nn.parallel.DistributedDataParallel
from .parallel import DataParallel  # noqa: F401 - torch.nn.DataParallel

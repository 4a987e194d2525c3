"""ember.nn: modules, parameters, layers, losses, functional, init, utils (matches torch.nn)."""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import functional  # noqa: F401
from . import init  # noqa: F401
from . import utils  # noqa: F401
from . import parallel  # noqa: F401 - ember.nn.parallel.DistributedDataParallel
from .parallel import DataParallel  # noqa: F401 - torch.nn.DataParallel


def factory_kwargs(kwargs):
    """The factory keywords (``device``, ``dtype``, ``memory_format``) of a module constructor's ``**kwargs``,
    merged with an explicit ``factory_kwargs`` dict among them (matches torch.nn.factory_kwargs). {} for None.
    TypeError "unexpected kwargs {...}" for other keys and "<key> specified twice, in **kwargs and in
    factory_kwargs" for a clash."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    unexpected = kwargs.keys() - (simple | {"factory_kwargs"})
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    out = dict(kwargs.get("factory_kwargs", {}))
    for k in simple:
        if k in kwargs:
            if k in out:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            out[k] = kwargs[k]
    return out

"""cpu kernels, one module per op category; each module's ``register(lib)`` adds its kernels."""
from . import copy, creation, elementwise, reduction, linalg, shape, indexing, random, nn, conv, special

MODULES = (copy, creation, elementwise, reduction, linalg, shape, indexing, random, nn, conv, special)


def register_all(lib):
    """Call every kernel module's ``register(lib)`` (copy, creation, elementwise, reduction, linalg, shape,
    indexing, random, nn, conv, special).
    """
    for m in MODULES:
        m.register(lib)

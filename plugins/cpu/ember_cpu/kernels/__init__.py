"""cpu kernels, one module per op category; each module's ``register(lib)`` adds its kernels."""
from . import copy, creation, elementwise, reduction, linalg, shape, indexing, random, nn, conv

MODULES = (copy, creation, elementwise, reduction, linalg, shape, indexing, random, nn, conv)


def register_all(lib):
    for m in MODULES:
        m.register(lib)

"""cpu kernels, one module per op category; each module's ``register(lib)`` adds its kernels."""
from . import copy, creation, elementwise, reduction, linalg, shape, indexing, random

MODULES = (copy, creation, elementwise, reduction, linalg, shape, indexing, random)


def register_all(lib):
    for m in MODULES:
        m.register(lib)

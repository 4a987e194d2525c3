"""cpu kernels, one module per op category; each module's ``register(lib)`` adds its kernels."""
from . import copy, creation, elementwise, reduction, linalg, linalg_decomp, shape, indexing, random, nn, conv, fft, special
from . import rnn

MODULES = (copy, creation, elementwise, reduction, linalg, linalg_decomp, shape, indexing, random, nn, conv, fft, special,
           rnn)


def register_all(lib):
    """Call every kernel module's ``register(lib)`` (copy, creation, elementwise, reduction, linalg,
    linalg_decomp, shape, indexing, random, nn, conv, fft, special, rnn).
    """
    for m in MODULES:
        m.register(lib)

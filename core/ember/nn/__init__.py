"""ember.nn: modules, parameters, layers, losses, functional, init (matches torch.nn)."""
from . import functional  # noqa: F401

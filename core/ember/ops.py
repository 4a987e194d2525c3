"""``ember.ops``: namespaces of ops plugins declare with ``Library.define`` (``ember.ops.<namespace>.<name>``)."""


def __getattr__(name):
    # ember.ops.<namespace> (e.g. ember.ops.quantized) appears when its plugin registers, which
    # happens lazily: load the plugins before saying it does not exist
    from . import _registry
    if not name.startswith("__") and not _registry._loaded:
        _registry.ensure_loaded()
        if name in globals():
            return globals()[name]
    raise AttributeError(f"module 'ember.ops' has no attribute '{name}'")

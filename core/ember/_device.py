"""ember.device and ember.layout: small hashable value objects (match torch.device / torch.layout)."""
from __future__ import annotations

__all__ = ["device", "layout", "strided"]


class device:
    """A device type (a string some plugin registered) and an optional index.

    ``device("cuda:1")``, ``device("cuda", 1)``, ``device(other_device)`` and an int
    (taken as an index of the current accelerator, as PyTorch does) are accepted.
    Device types are open-ended: a vendor's plugin adds ``"npu"`` without touching
    the core; whether the type is *available* is checked when a tensor lands there.
    Raises RuntimeError for a malformed string, as torch.device does.
    """

    __slots__ = ("type", "index", "_str")
    _cache: dict = {}

    def __new__(cls, type, index=None):
        try:
            return cls._cache[type, index]
        except (KeyError, TypeError):
            pass
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(): an index is given twice")
            return type
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            from ember import _registry
            type, index = _registry.default_accelerator_type(), type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got ({type.__class__.__name__})")
        name = type
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
            name, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if not name or not (name.isidentifier() and name.islower() or name.replace("_", "").isalnum()):
            raise RuntimeError(f"Invalid device string: '{type}'")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self = cls._cache.get((name, index))
        if self is None:
            self = object.__new__(cls)
            self.type = name
            self.index = index
            self._str = name if index is None else f"{name}:{index}"
            cls._cache[name, index] = self
        if isinstance(type, str):
            cls._cache[type, index if ":" not in type else None] = self
        return self

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self._str

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    # devices are interned (one object per (type, index)), so identity hashing is value hashing
    __hash__ = object.__hash__

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        from ember import _registry
        _registry.push_default_device(self)
        return self

    def __exit__(self, *exc):
        from ember import _registry
        _registry.pop_default_device()


class layout:
    """A memory layout (matches torch.layout). ``ember.strided`` is the core's; a plugin
    registers more (ember-sparse adds ``ember.sparse_coo``) through ``registry.register_layout``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_layout_by_name, (self.name,))


def _layout_by_name(name):
    """The layout ``name`` (unpickling), loading the plugin that registers it when it is not loaded yet."""
    from ember import _registry
    if name not in _registry.layouts and not _registry.load_for("layouts", name):
        _registry.ensure_loaded()
    return _registry.layouts[name]


strided = layout("strided")

"""Flatten and Unflatten (matches torch.nn): views over ``Tensor.flatten`` / ``Tensor.unflatten``."""
from __future__ import annotations

from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dims ``start_dim``..``end_dim`` into one: (N, C, H, W) -> (N, C*H*W) by default
    (matches torch.nn.Flatten)."""

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        """``input.flatten(start_dim, end_dim)``: e.g. (N, C, H, W) -> (N, C*H*W), same dtype (matches
        torch.nn.Flatten.forward).
        """
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        """Settings shown inside the repr: ``start_dim=..., end_dim=...``."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (a tuple / list of ints, one may be -1)
    (matches torch.nn.Unflatten). TypeError for other sizes, in PyTorch's words."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, int):
            self._require_tuple_int(unflattened_size)
        else:
            raise TypeError("invalid argument type for dim parameter")
        self.dim = dim
        self.unflattened_size = unflattened_size

    @staticmethod
    def _require_tuple_int(input):
        if isinstance(input, (tuple, list)):
            for idx, elem in enumerate(input):
                if not isinstance(elem, int):
                    raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                    f"{type(elem).__name__} at pos {idx}")
            return
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(input).__name__}")

    def forward(self, input):
        """``input.unflatten(dim, unflattened_size)``: (*, S, *) -> (*, *unflattened_size, *), same dtype (matches
        torch.nn.Unflatten.forward).
        """
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        """Settings shown inside the repr: ``dim=..., unflattened_size=...``."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

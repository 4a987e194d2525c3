"""``ember.func.rearrange``: einops' ``rearrange`` over ember's views (matches torch.func.rearrange, PyTorch's
native implementation of https://einops.rocks/api/rearrange/).

A pattern ``"b c (h w) -> b (c h) w"`` names the input's dims on the left and the output's on the right:
a name is one axis, ``(...)`` groups axes into one dim, ``...`` stands for the dims not named, ``()`` or ``1``
is a dim of size 1. Every name on one side appears exactly once on the other. The result is one reshape,
one permute and one reshape (a view where the strides allow, as ``reshape``).
"""
from __future__ import annotations

import math
import re

__all__ = ["rearrange"]

_TOKEN = re.compile(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\d+")


class _PatternError(ValueError):
    pass


def _parse(side: str):
    """A side of the pattern as a list of dims, each a list of axis names, or the string '...' for a bare
    ellipsis (a group may hold '...' among its names)."""
    dims, group = [], None
    pos = 0
    for m in _TOKEN.finditer(side):
        if side[pos:m.start()].strip():
            raise _PatternError(f"Unknown character '{side[pos:m.start()].strip()}'")
        pos = m.end()
        tok = m.group()
        if tok == "(":
            if group is not None:
                raise _PatternError("Axis composition is one-level (brackets inside brackets not allowed)")
            group = []
        elif tok == ")":
            if group is None:
                raise _PatternError("Brackets are not balanced")
            dims.append(group)
            group = None
        else:
            if tok.isdigit() and tok != "1":
                raise _PatternError(f"Non-unitary anonymous axes are not supported in rearrange (exception is "
                                    f"length 1), got {tok}")
            names = [] if tok == "1" else [tok]
            if group is None:
                dims.append("..." if tok == "..." else names)    # a bare ellipsis: its dims stay separate
            else:
                group.extend(names)
    if side[pos:].strip():
        raise _PatternError(f"Unknown character '{side[pos:].strip()}'")
    if group is not None:
        raise _PatternError("Brackets are not balanced")
    return dims


def rearrange(tensor, pattern: str, **axes_lengths):
    """Rearrange ``tensor`` (or a list / tuple of equal-shaped tensors, stacked along a new first dim) by an
    einops ``pattern`` (matches torch.func.rearrange). ``axes_lengths`` give sizes of axes that a group does not
    determine. ValueError for a malformed pattern, names that do not match on both sides, or sizes that do not
    divide the input's dims."""
    import ember
    if isinstance(tensor, (list, tuple)):
        tensor = ember.stack(list(tensor))
    if "->" not in pattern:
        raise ValueError(f"Error while processing rearrange-reduction pattern \"{pattern}\".\n"
                         f" Pattern must contain '->'")
    left_s, right_s = pattern.split("->", 1)
    try:
        left, right = _parse(left_s), _parse(right_s)
        return _apply(tensor, left, right, axes_lengths)
    except _PatternError as e:
        raise ValueError(f"Error while processing rearrange-reduction pattern \"{pattern}\".\n"
                         f" Input tensor shape: {tuple(tensor.shape)}. Additional info: {axes_lengths}.\n"
                         f" {e}") from None


def _names(dims):
    return [n for d in dims for n in (["..."] if d == "..." else d)]


def _apply(tensor, left, right, axes_lengths):
    ln, rn = _names(left), _names(right)
    for side, names in (("left", ln), ("right", rn)):
        dup = {n for n in names if names.count(n) > 1 and n != "..."}
        if dup:
            raise _PatternError(f"Indexing expression contains duplicate dimension \"{sorted(dup)[0]}\"")
    if set(ln) ^ set(rn):
        raise _PatternError(f"Identifiers only on one side of expression (should be on both): "
                            f"{set(ln) ^ set(rn)}")
    if "..." in ln:
        if any(d != "..." and "..." in d for d in left):
            raise _PatternError("Ellipsis inside parenthesis in the left side is not allowed")
        n_ell = tensor.dim() - (len(left) - 1)
        if n_ell < 0:
            raise _PatternError(f"Wrong shape: expected >={len(left) - 1} dims. Received {tensor.dim()}-dim tensor.")
        ell = [f"...{i}" for i in range(n_ell)]
        left = [d for dd in left for d in ([[e] for e in ell] if dd == "..." else [dd])]
        right = [d2 for d in right for d2 in ([[e] for e in ell] if d == "..." else
                                              [sum(([*ell] if n == "..." else [n] for n in d), [])])]
    elif len(left) != tensor.dim():
        raise _PatternError(f"Wrong shape: expected {len(left)} dims. Received {tensor.dim()}-dim tensor.")
    sizes = dict(axes_lengths)
    for d, n in zip(left, tensor.shape):
        known = [sizes[a] for a in d if a in sizes]
        unknown = [a for a in d if a not in sizes]
        if len(unknown) > 1:
            raise _PatternError(f"Could not infer sizes for {set(unknown)}")
        prod = math.prod(known)
        if unknown:
            if prod == 0 or n % prod:
                raise _PatternError(f"Shape mismatch, can't divide axis of length {n} in chunks of {prod}")
            sizes[unknown[0]] = n // prod
        elif prod != n:
            raise _PatternError(f"Shape mismatch, {prod} != {n}")
    order = [a for d in left for a in d]
    elementary = tensor.reshape([sizes[a] for a in order])
    out_order = [a for d in right for a in d]
    permuted = elementary.permute([order.index(a) for a in out_order])
    return permuted.reshape([math.prod(sizes[a] for a in d) for d in right])

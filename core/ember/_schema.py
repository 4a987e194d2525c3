"""Operator schemas: ``"add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"``.

A schema is parsed once, when the op is declared. It names the arguments (in order,
which are keyword-only, their defaults), which arguments are tensors and which are
mutated (``Tensor(a!) self``), and the returns (names give the fields of the named
tuple an op like ``max.dim`` returns). The grammar is the subset of PyTorch's
native_functions.yaml schema language that ember uses.

The schema also fixes the calling convention (``normaliser``): the form in which an
``int[N]``, ``bool[N]``, ``ScalarType`` or ``Device`` argument reaches every kernel, whatever
form the user passed (``kernel_size=2`` -> ``(2, 2)``, a list -> a tuple).
"""
from __future__ import annotations

import ast
import dataclasses
import operator
import re

import numpy as np

from . import _dtype as D
from ._device import device as _device

__all__ = ["Argument", "Return", "Schema", "parse_schema", "normaliser"]


@dataclasses.dataclass(frozen=True)
class Argument:
    """One parsed schema argument: name, type string, default (_NO_DEFAULT when required), keyword-only and mutated
    flags.
    """
    name: str            # Python parameter name
    type: str            # "Tensor", "Tensor?", "Tensor[]", "Scalar", "int", "int[]", "float", "bool", "str", "ScalarType?", ...
    default: object      # _NO_DEFAULT when required
    kwarg_only: bool     # after the "*" marker
    mutated: bool        # "(a!)": the op writes into this argument
    size: int | None = None   # N of "int[N]" / "bool[N]" (a single int or bool stands for N copies); None if unsized

    @property
    def is_tensor(self) -> bool:
        """Whether the type is a Tensor type (Tensor, Tensor?, Tensor[], ...)."""
        return self.type.startswith("Tensor")

    @property
    def has_default(self) -> bool:
        """Whether the argument has a default value."""
        return self.default is not _NO_DEFAULT


@dataclasses.dataclass(frozen=True)
class Return:
    """One parsed schema return: its name (None when unnamed) and type string."""
    name: str | None
    type: str


@dataclasses.dataclass(frozen=True)
class Schema:
    """A parsed operator schema: name, overload, arguments, returns and the original text."""
    name: str                    # "add"
    overload: str                # "Tensor", "" when none
    arguments: tuple             # of Argument
    returns: tuple               # of Return
    text: str

    @property
    def full_name(self) -> str:
        """'name.overload', or just the name when there is no overload."""
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def __str__(self):
        return self.text


class _NoDefault:
    def __repr__(self):
        return "<required>"


_NO_DEFAULT = _NoDefault()
_ARG = re.compile(r"^(?P<type>[\w\[\]?]+)(?:\((?P<alias>[a-z]!?)\))?(?P<opt>\?)?(?P<list>\[\d*\])?\??\s+(?P<name>\w+)(?:=(?P<default>.+))?$")


def _parse_default(text: str):
    text = text.strip()
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return tuple(_parse_default(t) for t in inner.split(",")) if inner else ()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # an identifier such as contiguous_format: kept as text


def _split_top(text: str):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_schema(text: str) -> Schema:
    """Parse one schema string; ValueError with the offending part when malformed."""
    m = re.match(r"^\s*(?P<name>[\w]+)(?:\.(?P<overload>\w+))?\((?P<args>.*)\)\s*->\s*(?P<ret>.+?)\s*$", text)
    if not m:
        raise ValueError(f"malformed schema: {text!r}")
    args, kwarg_only = [], False
    for part in _split_top(m["args"]):
        if part == "*":
            kwarg_only = True
            continue
        # "Tensor(a!) self", "Tensor? weight=None", "int[1] dim", "Scalar alpha=1"
        pm = re.match(r"^(?P<type>[A-Za-z]+(?:\[\d*\])?\??)(?:\((?P<alias>[a-z]+!?)\))?(?P<more>(?:\[\d*\])?\??)\s+(?P<name>\w+)(?:\s*=\s*(?P<default>.+))?$", part)
        if not pm:
            raise ValueError(f"malformed argument {part!r} in schema {text!r}")
        typ = pm["type"] + (pm["more"] or "")
        n = re.search(r"\[(\d+)\]", typ)
        typ = re.sub(r"\[\d+\]", "[]", typ)
        default = _NO_DEFAULT if pm["default"] is None else _parse_default(pm["default"])
        args.append(Argument(pm["name"], typ, default, kwarg_only, bool(pm["alias"] and pm["alias"].endswith("!")),
                             int(n[1]) if n else None))
    ret_text = m["ret"].strip()
    if ret_text.startswith("(") and ret_text.endswith(")"):
        ret_parts = _split_top(ret_text[1:-1])
    else:
        ret_parts = [ret_text]
    rets = []
    for part in ret_parts:
        if not part:
            continue
        bits = part.split()
        typ = re.sub(r"\([a-z]+!?\)", "", bits[0])
        rets.append(Return(bits[1] if len(bits) > 1 else None, typ))
    return Schema(m["name"], m["overload"] or "", tuple(args), tuple(rets), text)


# ---------------------------------------------------------------- calling convention
# What a kernel receives, whatever the user passed (docs/vendor-guide.md, "Calling conventions"):
#   int[N]    a tuple of Python ints; an int (or a 1-element sequence, N > 1) stands for N copies
#   int[]     a tuple of Python ints; a bare int is a TypeError (PyTorch: flip(x, 0) is one)
#   bool[N]   a tuple of Python bools, likewise
#   T?        None, or the value normalised as T
#   ScalarType  an ember.dtype (None, for a required one, is left to the meta);  Device  an ember.device
# Every other argument passes as given. Wrong lengths are left to the meta function, which names the op.
def normaliser(arg: Argument, op: str):
    """The function that brings a value of ``arg`` to the form every kernel receives, or None when
    values of its type pass unchanged (the entry point then does no work for it).

    :param arg: the parsed argument.
    :param op: the op's name, for the TypeError a value of the wrong type raises (PyTorch's words:
        "max_pool2d_with_indices(): argument 'kernel_size' must be tuple of ints, not float").
    :returns: ``normalise(value) -> value`` for a non-None value (the entry point skips None for an
        optional argument), or None.
    """
    base = arg.type.rstrip("?")
    if base in ("int[]", "bool[]"):
        kind = int if base == "int[]" else bool
        fn = _list_normaliser(op, arg.name, arg.size, kind, "ints" if kind is int else "bools", None)
        if arg.has_default and arg.default is not None and not arg.type.endswith("?"):
            # PyTorch takes None for such an argument as its default: amax(x, None), roll(x, 1, None)
            fn = _list_normaliser(op, arg.name, arg.size, kind, "ints" if kind is int else "bools", fn(arg.default))
        return fn
    if base == "ScalarType":
        return _dtype_normaliser(op, arg.name)
    if base == "Device":
        return _device_normaliser
    return None


def _element(x, kind):
    """``x`` as a Python int / bool, or None when it is not one (a bool is not an int here, as in PyTorch)."""
    if kind is int:
        if isinstance(x, bool) or isinstance(x, np.bool_):
            return None
        try:
            return operator.index(x)
        except TypeError:
            return None
    return bool(x) if isinstance(x, (bool, np.bool_)) else None


def _list_normaliser(op, name, n, kind, plural, default):
    def fail(v, i=None):
        what = f"not {type(v).__name__}" if i is None else \
            f"but found element of type {type(v[i]).__name__} at pos {i}"
        raise TypeError(f"{op}(): argument '{name}' must be tuple of {plural}, {what}")

    def slow(v):
        if isinstance(v, (list, tuple, range)):
            t = tuple(_element(x, kind) for x in v)
            for i, x in enumerate(t):
                if x is None:
                    fail(v, i)
            return t * n if n is not None and n > 1 and len(t) == 1 else t
        if v is None and default is not None:
            return default
        x = _element(v, kind) if n is not None else None
        if x is None:
            fail(v)
        return (x,) * n

    def normalise(v):
        # the fast paths: a tuple of exact ints / bools (the form internal callers use), a plain int / bool
        c = v.__class__
        if c is tuple:
            for x in v:
                if x.__class__ is not kind:
                    return slow(v)
            return v if n is None or n == 1 or len(v) != 1 else v * n
        if c is kind and n is not None:
            return (v,) * n
        return slow(v)
    return normalise


def _dtype_normaliser(op, name):
    def normalise(v):
        # None for a required dtype is left to the meta, which knows why (quantize_per_tensor without
        # ember-quantized names the missing plugin); no kernel runs before the meta has refused it
        if not isinstance(v, D.dtype) and v is not None:
            raise TypeError(f"{op}(): argument '{name}' must be ember.dtype, not {type(v).__name__}")
        return v
    return normalise


def _device_normaliser(v):
    return v if v.__class__ is _device else _device(v)

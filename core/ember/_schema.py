"""Operator schemas: ``"add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"``.

A schema is parsed once, when the op is declared. It names the arguments (in order,
which are keyword-only, their defaults), which arguments are tensors and which are
mutated (``Tensor(a!) self``), and the returns (names give the fields of the named
tuple an op like ``max.dim`` returns). The grammar is the subset of PyTorch's
native_functions.yaml schema language that ember uses.
"""
from __future__ import annotations

import ast
import dataclasses
import re

__all__ = ["Argument", "Return", "Schema", "parse_schema"]


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
        typ = re.sub(r"\[\d+\]", "[]", typ)
        default = _NO_DEFAULT if pm["default"] is None else _parse_default(pm["default"])
        args.append(Argument(pm["name"], typ, default, kwarg_only, bool(pm["alias"] and pm["alias"].endswith("!"))))
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

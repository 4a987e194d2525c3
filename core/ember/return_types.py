"""Named result tuples of the ops that return several tensors (matches torch.return_types).

``ember.max(t, dim=1)`` returns ``ember.return_types.max(values=..., indices=...)``: a
tuple (unpacks, indexes, compares like one) whose fields are also attributes. The repr
is PyTorch's::

    ember.return_types.max(
    values=tensor([2, 5]),
    indices=tensor([2, 2]))

PyTorch's are C struct sequences; ours are ``collections.namedtuple`` subclasses, so
they also have ``_fields`` / ``_asdict`` / ``_replace``.
"""
from __future__ import annotations

import collections

__all__ = ["max", "min", "aminmax", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax",
           "cummin"]


def _make(name, fields):
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"ember.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": __name__,
                               "__doc__": f"The result of ``ember.{name}``: a named tuple ({', '.join(fields)})."})
    cls.__qualname__ = name
    return cls


max = _make("max", ["values", "indices"])            # noqa: A001 - PyTorch's name
min = _make("min", ["values", "indices"])            # noqa: A001
aminmax = _make("aminmax", ["min", "max"])
sort = _make("sort", ["values", "indices"])
topk = _make("topk", ["values", "indices"])
kthvalue = _make("kthvalue", ["values", "indices"])
median = _make("median", ["values", "indices"])
nanmedian = _make("nanmedian", ["values", "indices"])
mode = _make("mode", ["values", "indices"])
cummax = _make("cummax", ["values", "indices"])
cummin = _make("cummin", ["values", "indices"])

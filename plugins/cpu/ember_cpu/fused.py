"""ember-cpu's fuser for ``ember.compile``: a run of captured elementwise nodes as one generated Python function.

``ember.compile`` hands a fuser a ``Subgraph`` (``ember.compiler._fusion``): consecutive elementwise nodes on one
device, every tensor contiguous with one shape or 0-dim. On the cpu the arithmetic is numpy's either way; what a
replayed node costs beyond its ufunc is the eager kernel's Python around it (resolving views, checking dtypes and
the path to take: 1-4 us a node, as much as the ufunc itself on the small tensors of a training step). Measured
alternatives (``benchmarks/bench_cpu_fusion.py``, docs/benchmarks.md): numexpr is 1.5-5x slower than numpy at
one thread on such chains, so the fuser writes plain numpy code. For a run it generates::

    def fused(t0, t1, t2, t3, t4):
        a0 = np_view(t0); a1 = np_view(t1); a2 = np_view(t2); a3 = np_view(t3); a4 = np_view(t4)
        with errstate(all="ignore"):
            lerp_arrays(a0, a1, k0, a0)                 # lerp_(grad, 1 - beta1)
            sqrt(a2, out=a3)
            true_divide(a3, float(a4[()]), out=a3)      # a 0-dim float tensor, as the kernel reads it
            ...

**Bit-identical to eager by construction.** Each node calls the very numpy function the eager kernel's fast path
calls (the same objects: ``elementwise.UNARY`` / ``BINARY``, ``lerp_arrays``, ``addcmul_arrays``, ...) on the
same arrays, with its operands read the same way. The conditions of each kernel's fast path are decided here,
once, from the slots' dtypes and the constants; a node whose eager kernel would take another path (mixed dtypes,
float16 / bfloat16, a Python number first, ``alpha`` on an integer add, ``where``, ...) makes ``fuse`` decline
the run (None), which then replays node by node. The one difference: a fused run that contains an op whose kernel
silences numpy's floating-point warnings (exp, sqrt, divide, ...) silences them for the whole run (the values are
the same). Ops are mapped to the kernels ember-cpu registers for them; a kernel re-registered for the cpu by
another library is not seen by this fuser (turn fusion off: ``EMBER_COMPILE_FUSION=0``).

Generated functions are cached by their source (the ops, the slots' dtypes and roles: not the shape or the
constants, which are arguments of the function that builds ``fused``).
"""
from __future__ import annotations

import numpy as np
from ember.compiler._fusion import Constant

from ._runtime import np_view
from .kernels import elementwise as ew
from .kernels._util import LOWP

__all__ = ["fuse"]

_CACHE = {}      # generated source -> the function that builds ``fused`` from the constants


class _Decline(Exception):
    pass


def _relu(a, out):
    np.maximum(a, 0, out=out)        # the relu kernel's call (kernels/nn.py)


def _fill(o, value):
    o.fill(value)                    # the fill_ kernel's call for float dtypes (kernels/copy.py)


def _copy(src, o):
    np.copyto(o, src, casting="unsafe")   # the copy_ kernel's call (kernels/copy.py)


class _Writer:
    """Source lines and the names they use for one subgraph."""

    def __init__(self, sub):
        self.sub = sub
        self.body, self.env, self.consts = [], {"np_view": np_view, "errstate": np.errstate}, []
        self.quiet = True

    def dtype(self, i):
        """The numpy dtype of slot ``i``."""
        return self.sub.slots[i].dtype.numpy_dtype

    def shape(self, i):
        """The shape of slot ``i``'s array: () for a 0-dim (scalar) slot, else the run's."""
        return () if self.sub.slots[i].scalar else self.sub.shape

    def fn(self, f, name):
        """The name under which the generated code calls ``f`` (bound in its namespace as ``f_<name>``)."""
        key = f"f_{name}"
        self.env[key] = f
        return key

    def const(self, value):
        """The name of a new constant of the generated function (an argument of its ``make``) holding ``value``."""
        self.consts.append(value)
        return f"k{len(self.consts) - 1}"

    def slot(self, x):
        """Operand ``x`` as a slot index; a Python number there is a path the fuser does not take (_Decline)."""
        if isinstance(x, Constant):
            raise _Decline
        return x

    # ---------------------------------------------------------------- one node, as its eager kernel computes it
    def node(self, n):
        """Append the source line of node ``n`` (a ``FusedNode``) as its eager kernel computes it, or _Decline."""
        op, o = n.op, n.out
        od = self.dtype(o)
        if od in LOWP:
            raise _Decline
        if op in ew.UNARY or op == "relu":
            x = self.slot(n.inputs[0])
            if self.dtype(x) != od:
                raise _Decline
            if op == "relu":
                f = self.fn(_relu, "relu")
            else:
                f = self.fn(ew.UNARY[op], op)
                self.quiet &= op not in ew._MAY_WARN
            self.body.append(f"{f}(a{x}, out=a{o})")
        elif op in ew.BINARY:
            self.binary(n, od)
        elif op == "lerp":
            x, y = self.slot(n.inputs[0]), self.slot(n.inputs[1])
            w = n.inputs[2]
            if not isinstance(w, Constant) or w.value.__class__ is not float or od.kind != "f" \
                    or self.dtype(x) != od or self.dtype(y) != od:
                raise _Decline
            self.body.append(f"{self.fn(ew.lerp_arrays, 'lerp')}(a{x}, a{y}, {self.const(w.value)}, a{o})")
        elif op in ("addcmul", "addcdiv"):
            s, a, b = (self.slot(x) for x in n.inputs)
            value = n.scalars.get("value", 1)
            if value.__class__ not in (float, int) or od.kind != "f" or any(self.dtype(i) != od for i in (s, a, b)) \
                    or self.shape(a) != self.shape(o) or self.shape(b) != self.shape(o):
                raise _Decline
            f = self.fn(ew.addcmul_arrays if op == "addcmul" else ew.addcdiv_arrays, op)
            self.body.append(f"{f}(a{s}, a{a}, a{b}, {self.const(value)}, a{o})")
        elif op == "copy":
            x = self.slot(n.inputs[0])
            if self.dtype(x).kind == "c" and od.kind != "c":     # the kernel silences a ComplexWarning there
                raise _Decline
            self.body.append(f"{self.fn(_copy, 'copy')}(a{x}, a{o})")
        elif op == "fill":
            value = n.scalars.get("value")
            if od.kind != "f" or value.__class__ not in (float, int):   # integers: the kernel's C-style cast
                raise _Decline
            self.body.append(f"{self.fn(_fill, 'fill')}(a{o}, {self.const(value)})")
        else:
            raise _Decline

    def binary(self, n, od):
        """The path ``elementwise.make_binary``'s kernel takes, or decline."""
        op, o = n.op, n.out
        f = self.fn(ew.BINARY[op], op)
        x, y = self.slot(n.inputs[0]), n.inputs[1]
        ad = self.dtype(x)
        if op in ("add", "sub"):
            alpha = n.scalars.get("alpha", 1)
            if isinstance(y, Constant):
                v = y.value
                if ad != od or alpha != 1 or v.__class__ is complex or (v.__class__ is float and od.kind not in "fc"):
                    raise _Decline
                self.body.append(f"{f}(a{x}, {self.const(v)}, out=a{o})")
                return
            if ad != od or self.dtype(y) != od:
                raise _Decline
            if alpha == 1:
                self.body.append(f"{f}(a{x}, a{y}, out=a{o})")
            elif od.kind == "f" and alpha.__class__ in (float, int):
                if od == np.float64:     # PyTorch's fma(+-alpha, other, self), rounded once
                    k = self.const(float(alpha) if op == "add" else -float(alpha))
                    self.body.append(f"{self.fn(ew.fma64, 'fma64')}({k}, a{y}, a{x}, a{o})")
                else:
                    self.body.append(f"{f}(a{x}, np.multiply(a{y}, {self.const(alpha)}), out=a{o})")
                    self.env["np"] = np
            else:
                raise _Decline
            return
        warns = op in ew._MAY_WARN and ad.kind in "fc"
        if isinstance(y, Constant):
            v = y.value
            if not (ad == od or od == np.bool_) or v.__class__ is complex \
                    or (v.__class__ is float and ad.kind not in "fc") or (v.__class__ is int and ad.kind == "b"):
                raise _Decline
            self.body.append(f"{f}(a{x}, {self.const(v)}, out=a{o})")
        elif self.sub.slots[y].scalar and not self.sub.slots[x].scalar and ad == od and ad.kind == "f" \
                and self.dtype(y).kind == "f":
            # a 0-dim float tensor with a dimensioned one: read as a Python number (the kernel's rule)
            self.body.append(f"{f}(a{x}, float(a{y}[()]), out=a{o})")
        elif ad == self.dtype(y) and (ad == od or od == np.bool_):
            self.body.append(f"{f}(a{x}, a{y}, out=a{o})")
        else:
            raise _Decline
        self.quiet &= not warns

    def source(self):
        """The generated module's source: ``make(k0, ...)`` returning ``fused(t0, ...)`` over the slots' tensors."""
        n = len(self.sub.slots)
        args = ", ".join(f"t{i}" for i in range(n))
        lines = [f"def make({', '.join(f'k{i}' for i in range(len(self.consts)))}):",
                 f"    def fused({args}):"]
        lines += [f"        a{i} = np_view(t{i})" for i in range(n)]
        if self.quiet:
            lines += [f"        {b}" for b in self.body]
        else:
            lines.append("        with errstate(all='ignore'):")
            lines += [f"            {b}" for b in self.body]
        lines.append("    return fused")
        return "\n".join(lines) + "\n"


def fuse(subgraph):
    """ember-cpu's fuser (``registry.register_fuser("cpu", fuse)``): one Python function running the run's nodes
    as their eager kernels' numpy calls, or None to decline (see the module doc).

    :param subgraph: an ``ember.compiler._fusion.Subgraph`` on the cpu.
    :returns: ``fused(*tensors)`` taking ``subgraph.slots``' tensors in order, or None.
    """
    w = _Writer(subgraph)
    try:
        for n in subgraph.nodes:
            w.node(n)
    except _Decline:
        return None
    src = w.source()
    make = _CACHE.get(src)
    if make is None:
        ns = dict(w.env)
        exec(compile(src, "<ember_cpu.fused>", "exec"), ns)
        make = _CACHE[src] = ns["make"]
    return make(*w.consts)

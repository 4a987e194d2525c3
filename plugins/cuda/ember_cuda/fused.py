"""ember-cuda's fuser for ``ember.compile``: a run of captured elementwise nodes as one ``cupy.fuse`` kernel.

``ember.compile`` hands a fuser a ``Subgraph`` (``ember.compiler._fusion``): consecutive elementwise nodes on one
device, every tensor contiguous with one shape or 0-dim. On a GPU each replayed node is one kernel launch (about
5-10 us of host time through cupy, more than the kernel itself on the tensors of a small model's step). The fuser
writes the run as one Python function of array calls and hands it to ``cupy.fuse``, which traces it once per
argument dtypes and compiles one CUDA kernel that runs every node on an element in registers::

    def kernel(a0, a1, a2, h0, k0):         # a: the slots' arrays, h: 0-dim cpu tensors (read on the host each
        v0 = a0; v1 = a1                    #    call), k: the capture's Python numbers as numpy scalars
        v2 = f_mul(v0, k0)                  # mul(x, 0.9)            (one line per node: the very function the
        v2 = f_add(v2, f_mul(v1, h0))       # add(., y, alpha=s)      eager kernel calls, kernels.elementwise_functions)
        v1 = f_sqrt(v2.astype(float32)).astype(float16)     # a float16 node: computed in float32, rounded
        copyto(a1, v1, casting="unsafe")    # only the slots whose value must reach memory
        copyto(a2, v2, casting="unsafe")

**What it reproduces.** Each node computes as its eager kernel does (``kernels.make_kernels``): the operands are
loaded in PyTorch's common dtype of the node (``ember.result_type``; float16 computes in float32), a Python number
becomes a numpy scalar of that dtype, ``alpha`` multiplies the second operand first, and the result is rounded to
the node's result dtype before it is stored - so a later node reads what eager would have read from memory.

**Exactness.** On the host emulation (device type ``cuda_emu``) the backend's ``fuse`` is the identity - the
function runs as its numpy calls, as ``cupy.fuse`` itself runs a fused function given numpy arrays - and a fused
replay equals eager bit for bit (tests/compile/test_cuda_fuser.py). On a GPU, NVRTC compiles the fused kernel
with its default ``--fmad=true``: a product followed by a sum may become one fused multiply-add, rounded once
where the eager kernels round twice, so float32 / float64 results may differ from eager's in the last bit of such
pairs (float16 nodes round to float16 between nodes, as eager does). That is the only difference the design
allows; it is checked on a GPU by the same tests (device type ``cuda``, with a tolerance of that size).

Declined (the nodes replay one by one): bfloat16 (stored as uint16 bits) and complex values; on integers,
``div_trunc`` / ``fmod`` (their zero check reads back), ``pow`` and ``floor`` (other code paths); ``sigmoid`` (its
function adds Python ints: see ``_UNARY``); ops other than ember-cuda's elementwise kernels
(``elementwise_functions``), ``where``, ``copy_`` and ``fill_``; a 0-dim result to store from a run over a larger
shape (one computed and used inside the run is fine). Generated functions are cached by their source (ops, dtypes
and roles; not the shape or the constants' values, which are arguments), so ``cupy.fuse`` compiles one kernel per
distinct run and argument dtypes.
"""
from __future__ import annotations

import contextlib

import ember
import numpy as np
from ember.compiler._fusion import Constant

from .kernels import F16, compute_np, elementwise_functions, fill_value

__all__ = ["make_fuser"]

FLOATS = frozenset({ember.float16, ember.float32, ember.float64})
#: ember dtypes a fused kernel computes on (bfloat16 is stored as uint16 bits, complex is left to the kernels)
VALUES = FLOATS | {ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64}
_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
#: ops fused for floating dtypes only: on integers their kernels read a zero divisor back to the host (div_trunc,
#: fmod), take another code path (pow's integer rule, floor's copy)
_FLOAT_ONLY = frozenset({"div_trunc", "fmod", "pow", "floor"})
#: unary kernels whose function is array calls only (sigmoid's ``1 / (1 + exp(-x))`` adds Python ints, which
#: cupy.fuse traces as int64 scalars where a plain cupy call treats them as weak: it could compute in float64)
_UNARY = frozenset({"abs", "floor", "exp", "expm1", "log", "log1p", "sin", "cos", "sqrt", "erf", "erfc", "erfinv",
                    "neg", "tanh", "relu"})


class _Decline(Exception):
    pass


class _Writer:
    """The generated function's lines and arguments for one subgraph."""

    def __init__(self, sub, B):
        self.sub, self.B, self.ew = sub, B, elementwise_functions(B)
        self.env = {"copyto": B.xp.copyto, "where": B.xp.where}
        self.body = []
        self.host = []          # (slot, compute numpy dtype) of each 0-dim cpu tensor operand read: argument h<j>
        self.consts = []        # numpy scalars: argument k<j>
        self.read = set()       # slots whose value before the run is read (arguments a<i>)
        self.written = set()    # slots a node of the run wrote so far

    def fn(self, f, name):
        """The name the generated code calls ``f`` by."""
        key = f"f_{name}"
        self.env[key] = f
        return key

    def dtype(self, i):
        """The ember dtype of slot ``i``."""
        return self.sub.slots[i].dtype

    def operand(self, x, cd):
        """Source of operand ``x`` (a slot index or a Constant) as the eager kernel's ``operand(x, cd)`` reads it."""
        if isinstance(x, Constant):
            v = x.value
            if v.__class__ is complex:
                raise _Decline
            self.consts.append(self.B.scalar(v, cd))                 # as the eager kernel's operand() converts it
            return f"k{len(self.consts) - 1}"
        slot = self.sub.slots[x]
        if slot.tensor.device.type != self.sub.device.type:      # a 0-dim cpu tensor: its item() on each call
            self.host.append((x, cd))
            return f"h{len(self.host) - 1}"
        if slot.dtype not in VALUES:
            raise _Decline
        if x not in self.written:
            self.read.add(x)
        return f"v{x}" if slot.dtype.numpy_dtype == cd else f"v{x}.astype(np_{cd.name})"

    def result(self, out, expr, rd, ed):
        """Assign the node's result ``expr`` (of numpy dtype ``rd``; ``ed``: the node's result dtype, None for a
        copy) to slot ``out`` as the eager kernel's ``store(out, r, ed)`` leaves it in memory: rounded to float16
        first for a float16 node, then cast C-style to the slot's dtype."""
        od = self.dtype(out)
        if od not in VALUES:
            raise _Decline
        slot = self.sub.slots[out]
        if slot.scalar and slot.store and self.sub.shape != ():
            raise _Decline                      # a 0-dim result to store from a larger run: not one kernel's shape
        if ed is F16 and od is not ember.bool and rd != np.float16:
            expr, rd = f"({expr}).astype(np_float16)", np.dtype(np.float16)
        if rd != od.numpy_dtype:
            expr = f"({expr}).astype(np_{od.numpy_dtype.name})"
        self.body.append(f"v{out} = {expr}")
        self.written.add(out)

    # ---------------------------------------------------------------- one node, as its eager kernel computes it
    def node(self, n):
        """Append the line of node ``n`` (a ``FusedNode``), or raise _Decline."""
        op, ins, sub = n.op, n.inputs, self.sub
        ew = self.ew
        if op in ew.binary:
            ed = ember.result_type(sub.operand(ins[0]), sub.operand(ins[1]))
            if op in ew.to_float and ed not in FLOATS:
                ed = ember.get_default_dtype()
            if ed not in VALUES or (ed not in FLOATS and op in _FLOAT_ONLY):
                raise _Decline
            cd = compute_np(ed)
            a, b = self.operand(ins[0], cd), self.operand(ins[1], cd)
            alpha = n.scalars.get("alpha", 1)
            if alpha != 1:
                if alpha.__class__ not in (int, float) or (ed not in FLOATS and alpha.__class__ is float):
                    raise _Decline
                b = f"{self.fn(ew.binary['mul'], 'mul')}({b}, {self.operand(Constant(alpha), cd)})"
            rd = np.dtype(np.bool_) if op in _COMPARISONS else cd
            self.result(n.out, f"{self.fn(ew.binary[op], op)}({a}, {b})", rd, ed)
        elif op in ew.unary and op in _UNARY:
            if isinstance(ins[0], Constant):
                raise _Decline
            ed = self.dtype(ins[0])
            if ed not in FLOATS and op not in ew.keep_dtype:
                ed = ember.get_default_dtype()       # exp(int tensor) is a float tensor
            if ed not in VALUES or (ed not in FLOATS and op in _FLOAT_ONLY) or (ed is ember.bool and op == "relu"):
                raise _Decline
            cd = compute_np(ed)
            self.result(n.out, f"{self.fn(ew.unary[op], op)}({self.operand(ins[0], cd)})", cd, ed)
        elif op == "where":
            od = self.dtype(n.out)
            if od not in VALUES or isinstance(ins[0], Constant):
                raise _Decline
            cd = compute_np(od)
            c = self.operand(ins[0], np.dtype(np.bool_))
            self.result(n.out, f"where({c}, {self.operand(ins[1], cd)}, {self.operand(ins[2], cd)})", cd, od)
        elif op == "copy":
            src = ins[0]
            if isinstance(src, Constant) or self.dtype(src) not in VALUES:
                raise _Decline
            # copy_ within a dtype copies the values; across dtypes it loads the source in its compute dtype and
            # stores with a C-style cast (no rounding through the node's dtype)
            cd = compute_np(self.dtype(src))
            self.result(n.out, self.operand(src, cd), cd, None)
        elif op == "fill":
            od, value = self.dtype(n.out), n.scalars.get("value")
            if od not in VALUES or value.__class__ not in (bool, int, float):
                raise _Decline
            value = fill_value(value, od)                             # fill_'s C conversions
            self.result(n.out, self.operand(Constant(value), od.numpy_dtype), od.numpy_dtype, None)
        else:
            raise _Decline

    def source(self):
        """``kernel(a..., h..., k...)``: the run's function (loads, one line per node, the stores)."""
        slots = self.sub.slots
        arrays = sorted(self.read | {i for i, s in enumerate(slots) if s.store})
        params = [f"a{i}" for i in arrays] + [f"h{j}" for j in range(len(self.host))] + \
            [f"k{j}" for j in range(len(self.consts))]
        lines = [f"def kernel({', '.join(params)}):"]
        lines += [f"    v{i} = a{i}" for i in sorted(self.read)]
        lines += [f"    {b}" for b in self.body]
        lines += [f"    copyto(a{i}, v{i}, casting='unsafe')" for i, s in enumerate(slots) if s.store]
        return "\n".join(lines) + "\n", arrays


def make_fuser(backend_factory, device_type: str):
    """ember-cuda's fuser for ``device_type`` (``registry.register_fuser(device_type, make_fuser(...))``):
    ``fuse(subgraph)`` returns ``fused(*tensors)`` running the run as one ``cupy.fuse`` kernel (on the host
    emulation: the same function as numpy calls), or None to decline (module doc).

    :param backend_factory: called on the first fusion; gives the array backend (``_backend.CupyBackend`` or
        ``HostBackend``) whose ``fuse(fn, name)`` compiles the function.
    :param device_type: "cuda", or "cuda_emu" for the host emulation.
    """
    cache = {}          # generated source -> the backend's fused function

    def fuse(subgraph):
        B = backend_factory()
        w = _Writer(subgraph, B)
        try:
            for n in subgraph.nodes:
                w.node(n)
        except _Decline:
            return None
        if not any(s.store for s in subgraph.slots):
            return None
        src, arrays = w.source()
        kernel = cache.get(src)
        if kernel is None:
            ns = dict(w.env)
            ns.update({f"np_{d.numpy_dtype.name}": d.numpy_dtype for d in VALUES})
            exec(compile(src, f"<{device_type}.fused>", "exec"), ns)
            kernel = cache[src] = B.fuse(ns["kernel"], f"ember_fused_{len(cache)}")
        host, consts, view, scalar = tuple(w.host), tuple(w.consts), B.view, B.scalar
        is_host = B.xp is np
        index = subgraph.device.index or 0
        current, device = B.current_device, B.device

        def fused(*tensors):
            args = [view(tensors[i]) for i in arrays]
            args += [scalar(tensors[i].item(), cd) for i, cd in host]
            args += consts
            guard = device(index) if current is not None and current() != index else contextlib.nullcontext()
            with guard, (np.errstate(all="ignore") if is_host else contextlib.nullcontext()):
                kernel(*args)
        return fused
    return fuse

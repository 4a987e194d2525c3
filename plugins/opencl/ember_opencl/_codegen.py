"""The shared kernel machinery of ember-opencl: C types, strided addressing, build cache, launch.

Every kernel of the plugin is OpenCL C text generated from a Python template for one
*signature* (dtypes, rank, op), compiled once per (device, source) - ``build`` keeps an
in-process dict per device, pyopencl keeps the binaries on disk - and launched with the
tensors passed as ``(cl.Buffer, storage offset, strides...)``: kernels address any
strides and storage offsets themselves, so no input is ever copied to make it contiguous.

The pieces (all names are for the kernel author):

- ``ctype(dtype)``: ember dtype -> OpenCL C type (bool->uchar, int8->char, ..., float64->double);
- ``shape_params(rank)`` / ``shape_args(shape)``: the logical shape ``long n0, ..., n{r-1}``
  shared by every operand of an elementwise kernel (the core's meta already expanded
  broadcast operands to the output's shape with 0-strides);
- ``tensor_params(name, ctype, rank)`` / ``tensor_args(t, ...)``: one tensor as
  ``__global T* name, long name_off, long name_s0, ...`` (offset and strides in elements);
- ``unravel(rank)``: C statements splitting the linear index ``i`` into coordinates ``c0..``;
- ``offset(name, rank)``: the C expression of an element's position in ``name``'s buffer;
- ``collapse(shape, strides...)``: merge dims that are contiguous for every operand (a
  contiguous add becomes rank 1), dropping size-1 dims, before generating the source;
- ``build(state, source, name)`` -> ``cl.Kernel``; ``launch(state, kernel, n, args)``;
- ``loop(rank, names, body, inner)`` + ``launch_loop(state, kernel, n, args)``: the fast
  pattern for elementwise kernels on CPU devices (each work item walks a contiguous range row
  by row, the inner loop vectorizes; 10M-element copy 15 ms -> 2.4 ms on PoCL, numpy ~2.7 ms).
  ``kernels/copy.py`` uses it; the per-element pattern below is the simplest to read.

A complete kernel - the strided, casting copy (``kernels/copy.py`` is the real one)::

    from ember_opencl import _codegen as cg

    def copy_into(dst, src):                      # same shape, same opencl device
        shape, (ds, ss) = cg.collapse(dst.shape, dst.stride(), src.stride())
        r = len(shape)
        src_code = f'''
        __kernel void copy(long total, {cg.shape_params(r)},
                           {cg.tensor_params("dst", cg.ctype(dst.dtype), r)},
                           {cg.tensor_params("src", cg.ctype(src.dtype), r, const=True)}) {{
            long i = get_global_id(0);
            if (i >= total) return;
            {cg.unravel(r)}
            dst[{cg.offset("dst", r)}] = ({cg.ctype(dst.dtype)})src[{cg.offset("src", r)}];
        }}'''
        state = cg.state_of(dst)                  # the device's context, queue and kernel cache
        k = cg.build(state, src_code, "copy")
        n = dst.numel()
        cg.launch(state, k, n, [cg.i64(n), *cg.shape_args(shape),
                                *cg.tensor_args(dst, ds), *cg.tensor_args(src, ss)])

``launch`` enqueues on the device's in-order queue and returns at once; reading results
back (``to_numpy``) waits for them. Scalars are passed as numpy scalars of the kernel's C
type (``cg.scalar(value, dtype)``, ``cg.i64(n)``). ``build`` adds the cl_khr_fp64 pragma
when the source mentions ``double`` and raises RuntimeError (naming the kernel, with the
compiler's log) when the build fails, or when the device lacks float64 support. float16
without cl_khr_fp16 is a storage-only type: read it with ``load(name, expr, "half")``
(``vload_half``), write it with ``store(...)`` (``vstore_half_rte``); both work for every
other type too, so templates can always use them.
"""
from __future__ import annotations

import re
import warnings

import numpy as np

__all__ = ["CTYPES", "ctype", "np_ctype", "scalar", "i64", "shape_params", "shape_args", "tensor_params",
           "tensor_args", "unravel", "offset", "load", "store", "inner_class", "loop",
           "loop_grid", "launch_loop", "collapse", "build", "launch", "state_of", "buffer",
           "work_group_limits", "build_program", "build_log", "FP64_PRAGMA"]

# ember dtype name -> OpenCL C type (bool is stored as one byte, 0 or 1)
CTYPES = {
    "bool": "uchar", "uint8": "uchar", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
    "float16": "half", "float32": "float", "float64": "double",
}
# OpenCL C type -> numpy dtype of a kernel scalar argument of that type
NP_CTYPES = {
    "uchar": np.uint8, "char": np.int8, "short": np.int16, "ushort": np.uint16, "int": np.int32,
    "uint": np.uint32, "long": np.int64, "ulong": np.uint64, "half": np.float16, "float": np.float32,
    "double": np.float64,
}
FP64_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
FP16_PRAGMA = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"


def ctype(dtype) -> str:
    """The OpenCL C type of an ember dtype (or dtype name); TypeError for one OpenCL has no type for."""
    name = dtype if isinstance(dtype, str) else dtype.name
    try:
        return CTYPES[name]
    except KeyError:
        raise TypeError(f"ember-opencl: dtype {name} has no OpenCL C type (supported: "
                        f"{', '.join(CTYPES)})") from None


def np_ctype(c: str):
    """numpy dtype of kernel scalar arguments of OpenCL C type ``c``."""
    return NP_CTYPES[c]


def scalar(value, dtype):
    """``value`` as the numpy scalar a kernel argument of ember ``dtype``'s C type takes (C conversion)."""
    c = ctype(dtype)
    t = NP_CTYPES[c]
    if c == "uchar" and (getattr(dtype, "name", dtype) == "bool"):
        return t(1 if value else 0)
    if np.issubdtype(t, np.integer):
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return t(np.iinfo(t).min)            # what x86's conversion gives for NaN / inf
            value = int(value)                       # C truncation toward zero
        info = np.iinfo(t)
        value = int(value)
        return t(((value - info.min) % (1 << info.bits)) + info.min)   # wrap like a C cast
    return t(value)


def i64(v) -> np.int64:
    """A ``long`` kernel argument."""
    return np.int64(v)


# ---------------------------------------------------------------- strided addressing
def shape_params(rank: int, prefix: str = "n") -> str:
    """``long n0, long n1, ...``: the logical shape a kernel iterates over."""
    return ", ".join(f"long {prefix}{d}" for d in range(rank))


def shape_args(shape) -> list:
    """The sizes of ``shape`` as np.int64 kernel arguments."""
    return [np.int64(s) for s in shape]


def tensor_params(name: str, c: str, rank: int, *, const: bool = False) -> str:
    """``__global T* name, long name_off, long name_s0, ...`` for one strided operand."""
    q = "const " if const else ""
    strides = "".join(f", long {name}_s{d}" for d in range(rank))
    return f"__global {q}{c}* {name}, long {name}_off{strides}"   # no restrict: out may alias an input


def load(name: str, index: str, c: str) -> str:
    """C expression reading element ``index`` of operand ``name`` of C type ``c`` (half -> float)."""
    return f"vload_half({index}, {name})" if c == "half" else f"{name}[{index}]"


def store(name: str, index: str, c: str, value: str) -> str:
    """C statement writing ``value`` (already of type ``c``; for half a float or double) to ``name[index]``."""
    return f"vstore_half_rte({value}, {index}, {name});" if c == "half" else f"{name}[{index}] = {value};"


def buffer(t):
    """The ``cl.Buffer`` holding tensor ``t`` (its storage's raw handle)."""
    return t.untyped_storage().handle


def tensor_args(t, strides=None) -> list:
    """Kernel arguments for ``tensor_params``: buffer, storage offset, strides (elements).

    ``strides`` (e.g. from ``collapse``) replaces ``t.stride()``; its length is the rank."""
    strides = t.stride() if strides is None else strides
    return [buffer(t), np.int64(t.storage_offset()), *(np.int64(s) for s in strides)]


def unravel(rank: int, index: str = "i", prefix: str = "n", coord: str = "c") -> str:
    """C statements ``long c{d} = ...;`` splitting linear ``index`` (row-major over the shape ``n*``)."""
    if rank == 0:
        return ""
    lines = [f"long {coord}_rem = {index};"]
    for d in range(rank - 1, 0, -1):
        lines.append(f"long {coord}{d} = {coord}_rem % {prefix}{d}; {coord}_rem /= {prefix}{d};")
    lines.append(f"long {coord}0 = {coord}_rem;")
    return "\n    ".join(lines)


def offset(name: str, rank: int, coord: str = "c") -> str:
    """C expression: the element offset of coordinates ``c0..`` in operand ``name``."""
    return " + ".join([f"{name}_off"] + [f"{coord}{d} * {name}_s{d}" for d in range(rank)])


def inner_class(stride) -> str:
    """How an operand walks the innermost dim: "1" (unit stride), "0" (broadcast) or "s" (any)."""
    return "1" if stride == 1 else "0" if stride == 0 else "s"


def loop(rank: int, names, body: str, inner=None) -> str:
    """C statements running ``body`` for every element of this work item's share of ``total``.

    The kernel has the parameters ``long total``, ``shape_params(rank)`` and one
    ``tensor_params(name, ...)`` per operand in ``names``. Each work item takes one contiguous
    range of linear indices (``launch_loop`` picks the number of work items) and walks it row by
    row: the coordinates are computed once (one division per dim), then an inner loop runs over
    the innermost dim, which LLVM vectorizes when the strides are known - ``inner`` gives each
    operand's ``inner_class`` ("1", "0", "s"), baked into the source. ``body`` sees ``o_<name>``
    (the element offset of each operand) and ``idx`` (the linear index, row-major).
    On PoCL this runs a 10M-element copy ~4x faster than one work item per element (on a GPU,
    where neighbouring work items should touch neighbouring addresses, one work item per element
    with ``unravel`` / ``offset`` is the better pattern). ``rank`` >= 1: pass ``collapse``'s shape.
    """
    inner = tuple(inner) if inner is not None else ("s",) * len(names)
    r = max(rank, 1)
    last = r - 1
    step = {"1": lambda n: f" + j", "0": lambda n: "", "s": lambda n: f" + j * {n}_s{last}"}
    bases = "\n        ".join(
        f"long b_{n} = {offset(n, r)};" for n in names)
    offs = " ".join(f"long o_{n} = b_{n}{step[c](n)};" for n, c in zip(names, inner))
    carry = _carry(last)
    return f"""long g_ = get_global_id(0), G_ = get_global_size(0);
    long per_ = (total + G_ - 1) / G_;
    long i_ = g_ * per_, hi_ = min(total, i_ + per_);
    if (i_ >= hi_) return;
    {unravel(r, index="i_")}
    while (i_ < hi_) {{
        long cnt_ = min(hi_ - i_, n{last} - c{last});
        {bases}
        for (long j = 0; j < cnt_; j++) {{
            long idx = i_ + j; {offs}
            {body}
        }}
        i_ += cnt_;
        c{last} = 0;
        {carry}
    }}"""


def _carry(last: int) -> str:
    """After a row: ``c[last-1] += 1``, wrapping into the dims before it (nested ifs, innermost first)."""
    code = ""
    for d in range(last):                       # dim 0 is the deepest if
        code = f"if (++c{d} == n{d}) {{ c{d} = 0; {code}}}"
    return code


def loop_grid(state, n: int) -> int:
    """The number of work items ``loop`` kernels launch for ``n`` elements (>= 1024 elements each,
    at most 1024 work items: enough to keep every compute unit busy, few enough to amortise)."""
    return max(1, min(1024, -(-n // 1024)))


def launch_loop(state, kernel, n: int, args):
    """Launch a ``loop`` kernel over ``n`` elements (``args`` start with ``i64(n)``)."""
    return launch(state, kernel, loop_grid(state, n), args) if n else None


def collapse(shape, *strides):
    """Merge dims that are jointly contiguous for every operand; drop size-1 dims.

    Returns ``(shape, [strides per operand])`` of rank >= 1 addressing the same elements in
    the same row-major order, e.g. a contiguous (4, 5, 6) -> (120,) with strides (1,).
    """
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    if not dims:
        return (1,), [(0,) for _ in strides]
    out_shape = [shape[dims[0]]]
    out_strides = [[s[dims[0]]] for s in strides]
    for d in dims[1:]:
        n = shape[d]
        if all(st[-1] == s[d] * n for st, s in zip(out_strides, strides)):
            out_shape[-1] *= n
            for st, s in zip(out_strides, strides):
                st[-1] = s[d]
        else:
            out_shape.append(n)
            for st, s in zip(out_strides, strides):
                st.append(s[d])
    return tuple(out_shape), [tuple(st) for st in out_strides]


# ---------------------------------------------------------------- build and launch
def state_of(t):
    """The per-device state (context, queue, kernel cache) of an opencl tensor's device."""
    from ._runtime import RUNTIME
    return RUNTIME.state(t.device.index or 0)


_KERNEL_NAME = re.compile(r"__kernel\s+void\s+(\w+)")


def build(state, source: str, name: str):
    """The compiled kernel ``name`` of ``source`` on ``state``'s device, built once per (device, source).

    Adds the fp64 / fp16 pragmas the source needs. RuntimeError naming the kernel and
    quoting the compiler log when the build fails; RuntimeError when the source needs
    float64 (float16) and the device does not report cl_khr_fp64 (cl_khr_fp16).
    """
    key = (source, name)
    k = state.kernels.get(key)
    if k is not None:
        return k
    import pyopencl as cl
    header = ""
    if re.search(r"\bdouble\b", source):
        if not state.fp64:
            raise RuntimeError(f"ember-opencl: kernel '{name}' needs float64, but device {state.label} "
                               f"('{state.device.name}') does not report cl_khr_fp64")
        header += FP64_PRAGMA
    uses_half = re.search(r"\bhalf\b", source) is not None
    if uses_half and state.fp16:
        header += FP16_PRAGMA
    # without cl_khr_fp16, half is still a storage type: vload_half / vstore_half_rte convert through float
    try:
        prg = build_program(state.context, header + source, state.build_options)
        k = getattr(prg, name)
    except cl.Error as e:
        log = build_log(e)
        hint = ("\n(the device does not report cl_khr_fp16: float16 can only be loaded and stored, with "
                "vload_half / vstore_half_rte)") if uses_half and not state.fp16 else ""
        raise RuntimeError(f"ember-opencl: building OpenCL kernel '{name}' failed on {state.label} "
                           f"('{state.device.name.strip()}', runtime {getattr(state, 'runtime_label', '?')}):\n"
                           f"{log.strip()}{hint}\nThe runtime passed ember's probe but cannot build this kernel; "
                           f"another runtime may (EMBER_OPENCL_PLATFORM=intel or =pocl selects one; pip install "
                           f"'ember-opencl[cpu]' brings both), or report it with the log above") from None
    except AttributeError:
        names = _KERNEL_NAME.findall(source)
        raise RuntimeError(f"ember-opencl: kernel '{name}' is not in its source (it defines "
                           f"{names})") from None
    dtypes = _scalar_arg_dtypes(source, name)
    if dtypes is not None:
        k.set_scalar_arg_dtypes(dtypes)      # pyopencl's typed argument packing: ~50 us -> ~1 us per launch
    state.kernels[key] = k
    state.compiles += 1
    return k


_QUALIFIERS = {"const", "volatile", "restrict", "__private", "private", "unsigned"}


def _scalar_arg_dtypes(source: str, name: str):
    """[numpy dtype per scalar parameter, None per pointer] of kernel ``name``, or None when a
    parameter's type is not a plain scalar C type (then pyopencl infers the types per call)."""
    m = re.search(r"__kernel\s+void\s+" + re.escape(name) + r"\s*\(([^)]*)\)", source)
    if m is None:
        return None
    out = []
    for param in m.group(1).split(","):
        param = param.strip()
        if not param:
            continue
        if "*" in param or "__global" in param or "__local" in param or "__constant" in param:
            out.append(None)
            continue
        words = [w for w in param.split()[:-1] if w not in _QUALIFIERS]
        if len(words) != 1 or words[0] not in NP_CTYPES:
            return None
        out.append(NP_CTYPES[words[0]])
    return out


def build_program(context, source: str, options=()):
    """``cl.Program(context, source).build(options)``, quietly: Intel's runtime prints a build log for every
    program, which pyopencl turns into a CompilerWarning per kernel. A failed build raises ``cl.Error``
    (``build_log`` gives its text); a successful one is not news."""
    import pyopencl as cl
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        return cl.Program(context, source).build(options=list(options))


def build_log(error) -> str:
    """The compiler's log of a failed build (``cl.Error``) as text."""
    log = getattr(error, "build_log", None) or str(error)
    if not isinstance(log, str):     # [(device, log), ...] in some pyopencl versions
        log = "\n".join(str(x[1]) if isinstance(x, tuple) else str(x) for x in log)
    return log


def launch(state, kernel, global_size, args, local_size=None):
    """Enqueue ``kernel(*args)`` over ``global_size`` work items (an int or tuple) on the device's queue.

    Nothing runs for zero work items. With ``local_size`` the global size is rounded up to a
    multiple of it (the kernel must bound-check its index). Returns the ``cl.Event``.
    """
    import pyopencl as cl
    gs = (global_size,) if isinstance(global_size, (int, np.integer)) else tuple(global_size)
    if any(int(g) == 0 for g in gs):
        return None
    if local_size is not None:
        ls = (local_size,) if isinstance(local_size, (int, np.integer)) else tuple(local_size)
        gs = tuple((int(g) + int(l) - 1) // int(l) * int(l) for g, l in zip(gs, ls))
    else:
        ls = None
    gs = tuple(int(g) for g in gs)
    kernel.set_args(*args)
    return cl.enqueue_nd_range_kernel(state.queue, kernel, gs, ls)


def work_group_limits(state, kernel, local_bytes_per_item: int = 0):
    """``(most work items per group, preferred multiple)`` for ``kernel`` on ``state``'s device, from what the
    runtime reports - never from constants tuned on one runtime.

    The most is CL_KERNEL_WORK_GROUP_SIZE (CL_DEVICE_MAX_WORK_GROUP_SIZE where the runtime does not answer),
    lowered so that ``local_bytes_per_item`` bytes of ``__local`` memory per work item fit in
    CL_DEVICE_LOCAL_MEM_SIZE beside what the kernel itself declares (CL_KERNEL_LOCAL_MEM_SIZE); at least 1.
    The multiple is CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE (1 where the runtime does not answer).
    pyopencl caches the answers per kernel and device.
    """
    import pyopencl as cl

    def info(what):
        try:
            return int(kernel.get_work_group_info(getattr(cl.kernel_work_group_info, what), state.device))
        except Exception:  # noqa: BLE001 - an optional query (cl.Error, or a stand-in device in tests)
            return None
    most = min(int(state.max_work_group_size), info("WORK_GROUP_SIZE") or int(state.max_work_group_size))
    if local_bytes_per_item:
        free = int(state.local_mem_size) - (info("LOCAL_MEM_SIZE") or 0)
        most = min(most, free // local_bytes_per_item)
    return max(1, most), max(1, info("PREFERRED_WORK_GROUP_SIZE_MULTIPLE") or 1)

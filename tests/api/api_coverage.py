"""Public-name coverage of PyTorch's namespaces by ember, generated from PyTorch 2.13 itself.

    python tests/api/api_coverage.py            # print the table
    python tests/api/api_coverage.py --write    # rewrite docs/api-coverage.md

For each namespace (``torch``, ``torch.Tensor``, ``torch.nn.functional``, ``torch.linalg``, ...) the
public names are those of ``dir()`` that do not start with ``_``, are callable, are not modules and are
defined by PyTorch (so ``torch.float32``, ``torch.nn.modules`` or the ``typing.cast`` that
``torch.optim.lr_scheduler`` imports are not counted, ``torch.nn.Linear`` and ``torch.add`` are). A name counts as present when the ember counterpart has an attribute of that name. Names ember
leaves out on purpose are listed in ``ABSENT`` (fnmatch patterns) with the reason; every other missing
name is listed as not implemented yet. tests/api/test_api_coverage.py checks that the committed
document is what this script generates, so it cannot drift.
"""
from __future__ import annotations

import fnmatch
import importlib
import pathlib
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api-coverage.md"
TORCH_VERSION = "2.13"

#: (title, PyTorch object path, ember object path, issue whose target it is)
NAMESPACES = [
    ("torch", "torch", "ember", 18),
    ("torch.Tensor", "torch.Tensor", "ember.Tensor", 18),
    ("torch.nn.functional", "torch.nn.functional", "ember.nn.functional", 18),
    ("torch.linalg", "torch.linalg", "ember.linalg", 18),
    ("torch.fft", "torch.fft", "ember.fft", 18),
    ("torch.special", "torch.special", "ember.special", 18),
    ("torch.nn", "torch.nn", "ember.nn", 19),
    ("torch.nn.init", "torch.nn.init", "ember.nn.init", 19),
    ("torch.optim", "torch.optim", "ember.optim", 19),
    ("torch.optim.lr_scheduler", "torch.optim.lr_scheduler", "ember.optim.lr_scheduler", 19),
    ("torch.distributions", "torch.distributions", "ember.distributions", 19),
    ("torch.amp", "torch.amp", "ember.amp", 19),
    ("torch.autograd", "torch.autograd", "ember.autograd", 19),
    ("torch.utils.data", "torch.utils.data", "ember.utils.data", 19),
    ("torch.func", "torch.func", "ember.func", 19),
    ("torch.random", "torch.random", "ember.random", 19),
    ("torch.jit", "torch.jit", "ember.jit", 22),
    ("torch.onnx", "torch.onnx", "ember.onnx", 22),
]

#: names ember leaves out on purpose, per namespace: (fnmatch pattern, reason)
TORCHSCRIPT = "TorchScript's C++ IR, type system and runtime: ember.jit traces to its own JSON graph (docs/jit.md)"

ABSENT = {
    "torch": [
        ("cudnn_*", "cuDNN's private entry points; ember-cuda computes with cupy (docs/cuda.md)"),
        ("miopen_*", "ROCm MIOpen's private entry points: no ROCm backend"),
        ("mkldnn_*", "oneDNN's private entry points: ember-cpu computes with numpy / scipy"),
        ("fbgemm_*", "FBGEMM's private entry points: quantized kernels are ember-quantized's (docs/architecture.md)"),
        ("is_vulkan_available", "no Vulkan backend"),
        ('AliasDb', TORCHSCRIPT),
        ('AnyType', TORCHSCRIPT),
        ('Argument', TORCHSCRIPT),
        ('ArgumentSpec', TORCHSCRIPT),
        ('AwaitType', TORCHSCRIPT),
        ('Block', TORCHSCRIPT),
        ('BoolType', TORCHSCRIPT),
        ('CallStack', TORCHSCRIPT),
        ('Capsule', TORCHSCRIPT),
        ('ClassType', TORCHSCRIPT),
        ('Code', TORCHSCRIPT),
        ('CompilationUnit', TORCHSCRIPT),
        ('CompleteArgumentSpec', TORCHSCRIPT),
        ('ComplexType', TORCHSCRIPT),
        ('ConcreteModuleType*', TORCHSCRIPT),
        ('DeepCopyMemoTable', TORCHSCRIPT),
        ('DeviceObjType', TORCHSCRIPT),
        ('DictType', TORCHSCRIPT),
        ('EnumType', TORCHSCRIPT),
        ('ErrorReport', TORCHSCRIPT),
        ('ExecutionPlan', TORCHSCRIPT),
        ('FileCheck', TORCHSCRIPT),
        ('FloatType', TORCHSCRIPT),
        ('FunctionSchema', TORCHSCRIPT),
        ('Future', TORCHSCRIPT),
        ('FutureType', TORCHSCRIPT),
        ('Gradient', TORCHSCRIPT),
        ('Graph', TORCHSCRIPT),
        ('GraphExecutorState', TORCHSCRIPT),
        ('IODescriptor', TORCHSCRIPT),
        ('InferredType', TORCHSCRIPT),
        ('IntType', TORCHSCRIPT),
        ('InterfaceType', TORCHSCRIPT),
        ('JITException', TORCHSCRIPT),
        ('ListType', TORCHSCRIPT),
        ('LiteScriptModule', TORCHSCRIPT),
        ('LockingLogger', TORCHSCRIPT),
        ('LoggerBase', TORCHSCRIPT),
        ('ModuleDict', TORCHSCRIPT),
        ('Node', TORCHSCRIPT),
        ('NoneType', TORCHSCRIPT),
        ('NoopLogger', TORCHSCRIPT),
        ('NumberType', TORCHSCRIPT),
        ('OperatorInfo', TORCHSCRIPT),
        ('OptionalType', TORCHSCRIPT),
        ('ParameterDict', TORCHSCRIPT),
        ('BufferDict', TORCHSCRIPT),
        ('PyObjectType', TORCHSCRIPT),
        ('RRefType', TORCHSCRIPT),
        ('Script*', TORCHSCRIPT),
        ('StaticModule', TORCHSCRIPT),
        ('StreamObjType', TORCHSCRIPT),
        ('StringType', TORCHSCRIPT),
        ('TensorType', TORCHSCRIPT),
        ('TracingState', TORCHSCRIPT),
        ('TupleType', TORCHSCRIPT),
        ('Type', TORCHSCRIPT),
        ('UnionType', TORCHSCRIPT),
        ('Use', TORCHSCRIPT),
        ('Value', TORCHSCRIPT),
        ('Tag', TORCHSCRIPT),
        ('import_ir_module*', TORCHSCRIPT),
        ('parse_ir', TORCHSCRIPT),
        ('parse_schema', TORCHSCRIPT),
        ('parse_type_comment', TORCHSCRIPT),
        ('merge_type_from_type_comment', TORCHSCRIPT),
        ('unify_type_list', TORCHSCRIPT),
        ('fork', TORCHSCRIPT),
        ('wait', TORCHSCRIPT),
        ('get_file_path', TORCHSCRIPT),
        ('[!U]*Storage', "the legacy typed storages: ember's storage is UntypedStorage (Tensor.untyped_storage())"),
        ('Storage', "the legacy typed storages: ember's storage is UntypedStorage (Tensor.untyped_storage())"),
        ('TypedStorage', "the legacy typed storages: ember's storage is UntypedStorage (Tensor.untyped_storage())"),
        ('StorageBase', "the legacy typed storages: ember's storage is UntypedStorage (Tensor.untyped_storage())"),
        ('from_file', "a storage mapped from a file (typed storages): ember.load reads ember.save's records"),
        ('*StorageContext', "TorchScript serialization's storage tables: ember.save has its own record format"),
        ('PyTorchFile*', 'the TorchScript zip reader / writer: ember.save / ember.jit.save write their own formats'),
        ('Sym*', "symbolic shapes of torch.compile's dynamo / inductor: ember.compile captures concrete shapes"),
        ('sym_*', "symbolic shapes of torch.compile's dynamo / inductor: ember.compile captures concrete shapes"),
        ('DispatchKey*', "PyTorch's C++ dispatch keys: ember's keys are (device type, layout, dtype) (DESIGN §3)"),
        ('ExcludeDispatchKeyGuard', "PyTorch's C++ dispatch keys: ember's keys are (device type, layout, dtype)"),
        ('DisableTorchFunction*', 'the __torch_function__ override protocol: ember has none'),
        ('classproperty', "a helper of PyTorch's own class definitions"),
        ('Benchmark*', "torch.utils.benchmark's C++ timer types"),
        ('ThroughputBenchmark', "torch.utils.benchmark's C++ timer types"),
        ('AggregationType', "torch.utils.benchmark's C++ timer types"),
        ('batch_norm_*', "SyncBatchNorm's CUDA statistics kernels (ATen internals behind nn.SyncBatchNorm)"),
        ('native_[bdgn]*', "ATen's native entry points behind nn.functional: ember's nn.functional is the public "
                           "surface (native_layer_norm is ember's layer-norm op, so it exists)"),
        ('rnn_relu*', "ATen's functional RNN entry points behind nn.RNN / LSTM / GRU: ember's modules are composites"),
        ('rnn_tanh*', "ATen's functional RNN entry points behind nn.RNN / LSTM / GRU: ember's modules are composites"),
        ('lstm*', "ATen's functional RNN entry points behind nn.RNN / LSTM / GRU: ember's modules are composites"),
        ('gru*', "ATen's functional RNN entry points behind nn.RNN / LSTM / GRU: ember's modules are composites"),
        ('quantized_*', "ATen's quantized entry points behind nn.quantized modules (ember-quantized's modules "
                        "call its own kernels)"),
        ('fused_moving_avg_obs_fake_quant', "the fused observer of PyTorch's QAT (ember-quantized's observers are "
                                            "composites)"),
        ('choose_qparams_optimized', "an internal of PyTorch's embedding-bag quantization"),
        ('*autocast_ipu*', 'autocast for Graphcore IPUs: no such backend'),
        ('*autocast_xla*', 'autocast for XLA devices: no such backend'),
        ('profiler_allow_cudagraph_cupti_lazy_reinit_cuda12', "a CUPTI switch of PyTorch's Kineto profiler"),
        ('compiled_with_cxx11_abi', "a property of PyTorch's C++ build"),
        ('prepare_multiprocessing_environment', "a hook of PyTorch's C++ multiprocessing shared-memory manager"),
        ('sparse_bsr_tensor', 'ember-sparse implements the COO layout only (docs/sparse.md)'),
        ('sparse_bsc_tensor', 'ember-sparse implements the COO layout only (docs/sparse.md)'),
        ('sparse_csr_tensor', 'ember-sparse implements the COO layout only (docs/sparse.md)'),
        ('sparse_csc_tensor', 'ember-sparse implements the COO layout only (docs/sparse.md)'),
        ('sparse_compressed_tensor', 'ember-sparse implements the COO layout only (docs/sparse.md)'),
        ('*_indices_copy', 'indices of the compressed sparse layouts: ember-sparse implements COO only'),
        ('resize_as_sparse_', 'a compressed-sparse resize: ember-sparse implements COO only'),
        ('hspmm', 'a hybrid-sparse (COO x CSR) product: ember-sparse implements COO only'),
        ('hsmm', 'a hybrid-sparse (COO x CSR) product: ember-sparse implements COO only'),
        ('dsmm', 'a legacy sparse x dense alias kept for TorchScript: use ember.sparse.mm'),
        ('saddmm', 'a legacy sparse addmm alias kept for TorchScript: use ember.sparse.addmm'),
        ('smm', 'a legacy sparse x sparse alias kept for TorchScript: use ember.sparse.mm'),
        ('sspaddmm', "a sparse-output addmm (sparse x sparse): ember-sparse's addmm returns dense"),
        ('AcceleratorError', "the CUDA runtime's error class: ember-cuda raises RuntimeError with cupy's message"),
        ('hash_tensor', "its result dtype is torch.uint64, which ember does not have (unsigned: uint8 only)"),
        ('Stream', "the device-generic stream class: ember's streams are a device module's service "
                   "(ember.cuda.Stream, ember.accelerator.current_stream); ember-cpu and ember-opencl have none"),
        ('Event', "the device-generic event class: ember's events are a device module's service "
                  "(ember.cuda.Event); ember-cpu and ember-opencl have none"),
    ],
    "torch.autograd": [
        ("Profiler*", "the Kineto profiler's types: ember has no tracer (ember.profiler counts fallbacks and copies)"),
        ("DeviceType", "PyTorch's C++ device-type enum: ember's device types are strings registered by plugins"),
        ("NestedIOFunction", "a legacy form of autograd.Function that PyTorch keeps for old code"),
        ("handle_torch_function", "the __torch_function__ override protocol: ember has none"),
    ],
    "torch.utils.data": [
        ("*DataPipe", "DataPipes: deprecated by PyTorch (moved to torchdata), not carried over"),
        ("DataChunk", "DataPipes: deprecated by PyTorch (moved to torchdata), not carried over"),
        ("functional_datapipe", "DataPipes: deprecated by PyTorch (moved to torchdata), not carried over"),
        ("*validation*", "DataPipes' type validation: deprecated by PyTorch with DataPipes"),
        ("guaranteed_datapipes_determinism", "DataPipes: deprecated by PyTorch with DataPipes"),
        ("non_deterministic", "DataPipes: deprecated by PyTorch with DataPipes"),
    ],
    "torch.func": [
        ("functionalize", "a graph pass removing mutation for compilers; ember's transforms run eagerly"),
    ],
    "torch.jit": [
        ("CompilationUnit", TORCHSCRIPT), ("RecursiveScriptClass", TORCHSCRIPT), ("interface", TORCHSCRIPT),
        ("script_method", TORCHSCRIPT + "; ember.jit.script is out of scope (docs/jit.md)"),
        ("ONNXTracedModule", "the TorchScript exporter's internal wrapper; ember.onnx.export traces with ember.jit.trace"),
        ("*_flatbuffer", "TorchScript's flatbuffer module format (mobile); ember.jit saves a zip of JSON and "
                         "ember.save records (docs/jit.md)"),
        ("last_executed_optimized_graph", "TorchScript's profiling executor; ember's graphs run op by op, unoptimised"),
        ("run_frozen_optimizations", "TorchScript graph passes on frozen modules; ember's graph runner has none"),
    ],
    "torch.onnx": [
        ("ExportableModule", "the torch.export-based exporter (dynamo=True), which ember does not have"),
        ("InputObserver", "the torch.export-based exporter (dynamo=True), which ember does not have"),
        ("ONNXProgram", "the torch.export-based exporter's result (dynamo=True); ember.onnx.export returns the "
                        "onnx.ModelProto"),
    ],
    "torch.Tensor": [
        ("to_mkldnn", "no oneDNN layout"),
        ("to_sparse_[bc]s[rc]", "the compressed sparse layouts (CSR / CSC / BSR / BSC): ember-sparse implements "
                                "COO only (docs/sparse.md)"),
        ("c*_indices", "indices of the compressed sparse layouts: ember-sparse implements COO only"),
        ("row_indices", "indices of the compressed sparse layouts: ember-sparse implements COO only"),
        ("resize_as_sparse_", "a compressed-sparse resize: ember-sparse implements COO only"),
        ("sparse_resize_*", "in-place change of a COO tensor's size and sparse / dense dims: ember-sparse's COO "
                            "tensors keep the size they were made with (make another with ember.sparse_coo_tensor)"),
        ("smm", "a legacy sparse x sparse alias kept for TorchScript: use ember.sparse.mm"),
        ("sspaddmm", "a sparse-output addmm (sparse x sparse): ember-sparse's addmm returns dense"),
        ("chalf", "complex32 (chalf): ember has no complex32 dtype (numpy has none either)"),
        ("hash_tensor", "its result dtype is torch.uint64, which ember does not have (unsigned: uint8 only)"),
        ("index", "binds dims to functorch.dim's first-class Dim objects: ember has no first-class dimensions"),
        ("storage", "the legacy typed storage: ember's storage is UntypedStorage (Tensor.untyped_storage())"),
        ("storage_type", "the legacy typed storage: ember's storage is UntypedStorage (Tensor.untyped_storage())"),
        ("to_padded_tensor", "a method of nested (jagged) tensors: ember has no nested tensors"),
    ],
    "torch.nn.functional": [
        ("scaled_mm", "a float8 matrix product with scale recipes: ember has no float8 dtypes"),
        ("scaled_grouped_mm", "a grouped float8 matrix product with scale recipes: ember has no float8 dtypes"),
        ("ScalingType", "the scale recipes of the float8 scaled_mm: ember has no float8 dtypes"),
        ("SwizzleType", "the scale layouts of the float8 scaled_mm: ember has no float8 dtypes"),
    ],
}


def _resolve(path):
    """The object at dotted ``path`` (importing modules on the way), or None."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p, None)
            if obj is None:
                return None
        return obj
    return None


def public_names(obj) -> list:
    """The public callable, non-module names of ``obj`` (sorted) that PyTorch defines: names a module merely
    imports from the standard library or typing (``cast``, ``Any``, ``wraps``) are not PyTorch's API."""
    out = []
    for n in dir(obj):
        if n.startswith("_"):
            continue
        try:
            v = getattr(obj, n)
        except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is not a public name
            continue
        if isinstance(v, types.ModuleType) or not callable(v):
            continue
        module = getattr(v, "__module__", None)
        if isinstance(module, str) and module.split(".")[0] not in ("torch", "torchgen"):
            continue
        out.append(n)
    return sorted(out)


def _absent_reason(namespace, name):
    for pattern, reason in ABSENT.get(namespace, ()):
        if fnmatch.fnmatchcase(name, pattern):
            return pattern, reason
    return None


def coverage() -> list:
    """Per namespace: dict(title, issue, total, present, absent {pattern: (reason, [names])}, missing [names])."""
    rows = []
    for title, tpath, epath, issue in NAMESPACES:
        tobj, eobj = _resolve(tpath), _resolve(epath)
        names = public_names(tobj)
        present, missing, absent = [], [], {}
        for n in names:
            if eobj is not None and hasattr(eobj, n):
                present.append(n)
                continue
            why = _absent_reason(title, n)
            if why is not None:
                absent.setdefault(why[0], (why[1], []))[1].append(n)
            else:
                missing.append(n)
        rows.append({"title": title, "issue": issue, "ember": epath, "total": len(names), "present": present,
                     "absent": absent, "missing": missing})
    return rows


def render(rows) -> str:
    """docs/api-coverage.md."""
    out = ["# Coverage of PyTorch's public names", "",
           f"Generated by `python tests/api/api_coverage.py --write` from PyTorch {TORCH_VERSION} — do not edit by "
           "hand; `tests/api/test_api_coverage.py` fails when it is out of date.", "",
           "A name is a public callable of the namespace (`dir()`, no leading underscore, not a module, defined by "
           "PyTorch rather than imported from the standard library or typing); it is "
           "present when the ember counterpart has it. *Absent on purpose* names are left out with the reason; "
           "*not yet* names are missing and counted against the target (issues 18 and 19: every name present "
           "or absent on purpose; issue 19's namespaces at least 90 % present). The last column leaves the names "
           "absent on purpose out of the count.", "",
           "| namespace | ember | names | present | absent on purpose | not yet | present % | present % of the "
           "rest |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n_abs = sum(len(v[1]) for v in r["absent"].values())
        pct = 100.0 * len(r["present"]) / r["total"] if r["total"] else 100.0
        rest = r["total"] - n_abs
        pct_rest = 100.0 * len(r["present"]) / rest if rest else 100.0
        out.append(f"| `{r['title']}` | `{r['ember']}` | {r['total']} | {len(r['present'])} | {n_abs} | "
                   f"{len(r['missing'])} | {pct:.1f} | {pct_rest:.1f} |")
    for r in rows:
        if not r["absent"] and not r["missing"]:
            continue
        out += ["", f"## `{r['title']}`", ""]
        for pattern, (reason, names) in r["absent"].items():
            out.append(f"- absent on purpose, `{pattern}` ({reason}): " + ", ".join(f"`{n}`" for n in names))
        if r["missing"]:
            out.append(f"- not yet ({len(r['missing'])}): " + ", ".join(f"`{n}`" for n in r["missing"]))
    return "\n".join(out) + "\n"


def main(argv) -> int:
    import torch
    if not torch.__version__.startswith(TORCH_VERSION):
        print(f"PyTorch {TORCH_VERSION} is needed (found {torch.__version__})", file=sys.stderr)
        return 2
    text = render(coverage())
    if "--write" in argv:
        DOC.write_text(text, encoding="utf-8")
        print(f"written: {DOC.relative_to(ROOT)}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

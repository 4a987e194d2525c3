"""The rest of torch.jit's and torch.onnx's Python surface (ember.jit._extras, ember.onnx._symbolic), side by side
with PyTorch where it runs on cpu; plugin- and library-defined ops in saved graphs."""
from __future__ import annotations

import io
import subprocess
import sys
import typing

import ember
import ember.nn as nn
import numpy as np
import pytest

torch = pytest.importorskip("torch")


def test_fork_wait_future_attribute_isinstance_as_torch():
    for lib in (torch, ember):
        fut = lib.jit.fork(lambda a, b=1: a + b, 2, b=3)
        assert lib.jit.wait(fut) == 5 and fut.done() and fut.value() == 5
        assert fut.then(lambda f: f.value() * 10).wait() == 50
        assert tuple(lib.jit.Attribute([1, 2], typing.List[int])) == ([1, 2], typing.List[int])
        assert lib.jit.Attribute([1, 2], typing.List[int]).value == [1, 2]
    cases = [([1, 2], typing.List[int]), ([1, "x"], typing.List[int]), ({"a": 1}, typing.Dict[str, int]),
             ((1, "a"), typing.Tuple[int, str]), ((1, 2, 3), typing.Tuple[int, ...]), (None, typing.Optional[int]),
             (3, typing.Optional[int]), ("s", typing.Union[int, str]), (2.0, int)]
    for obj, tp in cases:
        assert ember.jit.isinstance(obj, tp) == torch.jit.isinstance(obj, tp), (obj, tp)
    t = ember.ones(2)
    assert ember.jit.isinstance({"w": t}, typing.Dict[str, ember.Tensor])
    assert issubclass(ember.jit.ScriptWarning, Warning)


def test_switches_keep_their_settings_and_refuse_what_torch_refuses():
    class Obj:
        pass
    for lib in (torch, ember):
        o = Obj()
        lib.jit.set_module(o, "mymod")
        assert o.__module__ == "mymod"
        with pytest.raises(TypeError, match="mod argument should be a string"):
            lib.jit.set_module(o, 3)
        with pytest.raises(Exception, match=r"unrecognized fuser option \(name: nope\)"):
            with lib.jit.fuser("nope"):
                pass
        with lib.jit.optimized_execution(False), lib.jit.strict_fusion():
            pass
        was = lib.jit.onednn_fusion_enabled()
        lib.jit.enable_onednn_fusion(True)
        assert lib.jit.onednn_fusion_enabled() is True
        lib.jit.enable_onednn_fusion(was)
    old = ember.jit.set_fusion_strategy([("DYNAMIC", 3)])
    assert ember.jit.set_fusion_strategy(old) == [("DYNAMIC", 3)]
    assert ember.compiler.config.fusion
    with ember.jit.fuser("none"):                # "none": ember.compile's fusion is off in the block
        assert not ember.compiler.config.fusion
    assert ember.compiler.config.fusion


def test_export_opnames_and_optimize_for_inference():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    t = ember.jit.trace(m, (ember.ones(2, 3),))
    assert ember.jit.export_opnames(t) == ["linear", "relu"]
    frozen = ember.jit.optimize_for_inference(t)
    assert not frozen.training and ember.equal(frozen(ember.ones(2, 3)), m(ember.ones(2, 3)))
    for lib, mod in ((torch, torch.nn.Linear(2, 2)), (ember, nn.Linear(2, 2))):
        with pytest.raises(RuntimeError, match="optimize_for_inference expects a ScriptModule"):
            lib.jit.optimize_for_inference(mod)


def test_scalar_type_enums_match_torch():
    assert {k: int(v) for k, v in torch.onnx.TensorProtoDataType.__members__.items()} == \
        {m.name: m.value for m in ember.onnx.TensorProtoDataType}
    assert [(m.name, m.value) for m in torch.onnx.JitScalarType] == [(m.name, m.value) for m in ember.onnx.JitScalarType]
    for t, e in zip(torch.onnx.JitScalarType, ember.onnx.JitScalarType):
        if t.name != "UNDEFINED":
            assert t.scalar_name() == e.scalar_name() and t.torch_name() == e.torch_name(), t.name
    for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8", "bool",
                 "complex64", "qint8", "quint8"):
        t = torch.onnx.JitScalarType.from_dtype(getattr(torch, name))
        e = ember.onnx.JitScalarType.from_dtype(getattr(ember, name))
        assert int(t) == int(e) and int(t.onnx_type()) == int(e.onnx_type())
        assert e.dtype() is getattr(ember, name)
    for onnx_type in (1, 2, 3, 6, 7, 9, 10, 11, 16):
        assert int(ember.onnx.JitScalarType.from_onnx_type(onnx_type)) == \
            int(torch.onnx.JitScalarType.from_onnx_type(onnx_type))
    for lib in (torch, ember):
        with pytest.raises(lib.onnx.OnnxExporterError, match="Unknown dtype: None"):
            lib.onnx.JitScalarType.from_dtype(None)


def test_custom_symbolic_exports_an_unmapped_op_and_unregisters():
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")

    class M(nn.Module):
        def forward(self, x):
            return ember.sinh(x).clamp(min=-3.0) * 2

    x = ember.randn(3, 4)
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="'sinh' has no ONNX mapping"):
        ember.onnx.export(M(), x, io.BytesIO())
    for lib in (torch, ember):
        with pytest.raises(lib.onnx.OnnxExporterError, match="must match the format domain::name"):
            lib.onnx.register_custom_op_symbolic("sinh", lambda g, a: a, 13)
    ember.onnx.register_custom_op_symbolic("aten::sinh", lambda g, a: g.op("Sinh", a), 13)
    try:
        buf = io.BytesIO()
        ember.onnx.export(M(), x, buf, dynamic_axes={"input": [0]})
        sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
        for b in (1, 5):
            xb = ember.randn(b, 4)
            np.testing.assert_allclose(sess.run(None, {"input": xb.numpy()})[0], M()(xb).numpy(), rtol=1e-6)
        # an op of another domain adds that domain to the model's opset imports
        ember.onnx.register_custom_op_symbolic("aten::sinh", lambda g, a: g.op("mydomain::Sinh", a, alpha_f=1.0),
                                               15)
        model = ember.onnx.export(M(), x, None)
        assert ("mydomain", 1) in {(o.domain, o.version) for o in model.opset_import}
        assert any(n.op_type == "Sinh" and n.domain == "mydomain" for n in model.graph.node)
        assert ember.onnx.export(M(), x, None, opset_version=13).graph.node[0].domain == ""   # the opset-13 one
    finally:
        ember.onnx.unregister_custom_op_symbolic("aten::sinh", 13)
        ember.onnx.unregister_custom_op_symbolic("aten::sinh", 15)
    with pytest.raises(ember.onnx.UnsupportedOperatorError):
        ember.onnx.export(M(), x, io.BytesIO())


_DEFINE = '''
import ember
from ember.library import Library
lib = Library("myvendor")
lib.define("scaled(Tensor self, float scale=2.0) -> Tensor",
           lambda self, scale=2.0: (self.device, (self.device.type, self.layout.name, self.dtype), tuple(self.shape),
                                    self.dtype))
lib.impl("myvendor::scaled", lambda self, scale=2.0, *, out: out.copy_(self * scale), device="cpu")
'''


def test_a_library_op_is_saved_by_name_and_loading_without_it_says_what_to_define(tmp_path):
    path = str(tmp_path / "g.pt")
    save = _DEFINE + f'''
t = ember.jit.trace(lambda x: ember.ops.myvendor.scaled(x, 3.0) + 1, (ember.ones(2),))
ember.jit.save(t, {path!r})
'''
    subprocess.run([sys.executable, "-c", save], check=True)
    missing = subprocess.run([sys.executable, "-c", f"import ember; ember.jit.load({path!r})"], capture_output=True,
                             text=True)
    assert missing.returncode != 0
    assert "the graph calls 'myvendor::scaled'" in missing.stderr and "Library('myvendor').define" in missing.stderr
    ok = subprocess.run([sys.executable, "-c", _DEFINE + f"print(ember.jit.load({path!r})(ember.ones(2)).tolist())"],
                        capture_output=True, text=True, check=True)
    assert ok.stdout.strip() == "[4.0, 4.0]"


def test_a_plugin_op_names_its_plugin_when_missing():
    from ember.jit._graph import _unknown_op
    msg = _unknown_op("quantized_linear", "node 2 (quantized_linear)",
                      {"op": "quantized::linear", "plugin": "quantized"})
    assert "'quantized::linear', which the plugin 'quantized' defines" in msg and "install" in msg.lower()
    pytest.importorskip("ember_quantized", reason="quantized ops come from the ember-quantized plugin")
    from ember._dispatch import ops
    assert ops["quantized_linear"].qualname == "quantized::linear" and ops["quantized_linear"].plugin == "quantized"

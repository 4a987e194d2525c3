"""ember.onnx.export: traced graphs mapped to ONNX, checked by onnx.checker, run in onnxruntime and compared with
ember (float32, rel 1e-5); dynamic batch; unmapped ops named with the opset."""
import io

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.examples.digits import build_model

onnx = pytest.importorskip("onnx", reason="ember.onnx.export needs the onnx package (pip install ember[onnx])")
ort = pytest.importorskip("onnxruntime", reason="running exported models needs onnxruntime (pip install ember[onnx])")


def _lenet():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(6, 16, 5), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.5),
                      nn.Flatten(), nn.Linear(16 * 5 * 5, 84), nn.ReLU(), nn.Dropout(0.2), nn.Linear(84, 10))
    with ember.no_grad():
        for bn in (m[1], m[5]):
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_()
    return m


def _export(m, x, **kw):
    buf = io.BytesIO()
    ember.onnx.export(m, (x,), buf, **kw)
    model = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(model, full_check=True)
    return model, ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])


def _close(got, want):
    want = want.detach().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = max(float(np.abs(want).max()), 1e-30)
    assert float(np.abs(got - want).max()) / scale < 1e-5


@pytest.mark.parametrize("case", ["mlp", "cnn", "lenet"])
@pytest.mark.parametrize("fold", [True, False])
def test_export_runs_in_onnxruntime_like_ember_with_dynamic_batch(case, fold):
    m = _lenet() if case == "lenet" else build_model(case)
    m.train()                                 # export runs the model in eval mode and puts it back
    shape = (1, 28, 28) if case == "lenet" else (1, 8, 8)
    model, sess = _export(m, ember.randn(2, *shape), input_names=["image"], output_names=["logits"],
                          dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}}, do_constant_folding=fold)
    assert m.training
    m.eval()
    assert model.opset_import[0].version == 17
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert [o.name for o in model.graph.output] == ["logits"]
    for b in (1, 2, 9):
        x = ember.randn(b, *shape)
        _close(sess.run(None, {"image": x.numpy()})[0], m(x))
    if case == "lenet":
        kinds = {n.op_type for n in model.graph.node}
        assert {"Conv", "MaxPool", "Relu", "Gemm"} <= kinds and "Dropout" not in kinds


def test_fixed_shape_without_dynamic_axes_and_params_as_inputs():
    m = build_model("mlp").eval()
    model, sess = _export(m, ember.randn(3, 1, 8, 8), export_params=False)
    names = [i.name for i in model.graph.input]
    assert names[0] == "input" and "1.weight" in names
    assert "1.weight" not in {i.name for i in model.graph.initializer}
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [3, 1, 8, 8]
    x = ember.randn(3, 1, 8, 8)
    feed = {"input": x.numpy(), **{n: p.detach().numpy() for n, p in m.named_parameters() if n in names}}
    _close(sess.run(None, feed)[0], m(x))


def test_function_with_several_ops_and_outputs():
    def f(x, w):
        h = ember.tanh(x @ w) * 2 - ember.sigmoid(x).sum(-1, keepdim=True)
        return ember.softmax(h, -1), ember.cat([h, x.permute(0, 1)], 1).mean(0), h[:, 1:3]
    x, w = ember.randn(4, 5), ember.randn(5, 5)
    buf = io.BytesIO()
    ember.onnx.export(f, (x, w), buf, opset_version=18)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"input_0": x.numpy(), "input_1": w.numpy()})
    for g, want in zip(got, f(x, w)):
        _close(g, want)


def test_exports_a_traced_module_and_returns_the_proto_without_f():
    m = build_model("cnn").eval()
    t = ember.jit.trace(m, ember.randn(2, 1, 8, 8))
    proto = ember.onnx.export(t, ember.randn(2, 1, 8, 8))
    assert isinstance(proto, onnx.ModelProto)
    onnx.checker.check_model(proto)


def test_unmapped_op_names_the_op_and_opset():
    def f(x):
        return ember.special.digamma(x + 2)
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match=r"'digamma'.*opset_version=17"):
        ember.onnx.export(f, ember.ones(3), io.BytesIO())
    with pytest.raises(ValueError, match="opset_version 9"):
        ember.onnx.export(nn.Linear(2, 2), ember.ones(1, 2), io.BytesIO(), opset_version=9)
    with pytest.raises(ValueError, match="dynamic_axes names 'nope'"):
        ember.onnx.export(nn.Linear(2, 2), ember.ones(1, 2), io.BytesIO(), dynamic_axes={"nope": [0]})


def test_is_in_onnx_export_during_export_only():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * 2
    ember.onnx.export(M(), ember.ones(2), io.BytesIO())
    assert seen == [True] and ember.onnx.is_in_onnx_export() is False


def _flat(r):
    out = []
    for e in (r if isinstance(r, tuple) else (r,)):
        out += _flat(e) if isinstance(e, tuple) else [e]
    return out


class _LstmLM(nn.Module):
    """A word-level LSTM language model (embedding -> 2-layer LSTM -> vocabulary logits)."""

    def __init__(self, vocab=10, dim=6):
        super().__init__()
        self.embed, self.lstm, self.head = nn.Embedding(vocab, dim), nn.LSTM(dim, dim, 2, batch_first=True), \
            nn.Linear(dim, vocab)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out).log_softmax(-1)


_SEQ = {   # model, example input, dynamic axes of the input, input shapes to run the exported model at
    "lstm": lambda: (nn.LSTM(4, 6, batch_first=True), ember.randn(2, 5, 4), {0: "batch"}, [(1, 5, 4), (7, 5, 4)]),
    "lstm_bi2": lambda: (nn.LSTM(4, 6, num_layers=2, bidirectional=True), ember.randn(5, 2, 4), {1: "batch"},
                         [(5, 1, 4), (5, 6, 4)]),
    "encoder_layer": lambda: (nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), ember.randn(2, 5, 8),
                              {0: "batch", 1: "seq"}, [(1, 3, 8), (4, 9, 8)]),
    "encoder_prenorm_gelu": lambda: (nn.TransformerEncoder(nn.TransformerEncoderLayer(
        8, 2, 16, norm_first=True, activation="gelu"), 2, enable_nested_tensor=False), ember.randn(5, 2, 8),
        {0: "seq", 1: "batch"}, [(3, 1, 8), (7, 4, 8)]),
    "embedding_layernorm": lambda: (nn.Sequential(nn.Embedding(10, 4), nn.LayerNorm(4), nn.GELU()),
                                    ember.tensor([[1, 2, 3], [4, 5, 9]]), {0: "batch", 1: "seq"}, [(1, 1), (5, 7)]),
    "lstm_language_model": lambda: (_LstmLM(), ember.tensor([[1, 2, 3, 4], [4, 5, 9, 0]]), {0: "batch"},
                                    [(1, 4), (6, 4)]),
}


def _run_seq(m, sess, shape, dtype):
    x = ember.randn(*shape) if dtype == ember.float32 else ember.randint(0, 10, shape)
    got = sess.run(None, {"input": x.numpy()})
    want = _flat(m(x))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _close(g, w)


@pytest.mark.parametrize("case", sorted(_SEQ))
def test_sequence_models_export_at_fixed_shapes(case):
    ember.manual_seed(3)
    m, x, _, _ = _SEQ[case]()
    m.eval()
    model, sess = _export(m, x)
    assert all(d.HasField("dim_value") for d in model.graph.input[0].type.tensor_type.shape.dim)
    _run_seq(m, sess, tuple(x.shape), x.dtype)


@pytest.mark.parametrize("case", sorted(_SEQ))
def test_sequence_models_export_with_dynamic_batch_and_sequence(case):
    """The sizes the trace recorded (an LSTM's reshapes and zero initial state, attention's head reshapes of
    seq x batch rows) follow the dynamic dims: the exported model runs at other batch sizes and sequence lengths."""
    ember.manual_seed(3)
    m, x, axes, shapes = _SEQ[case]()
    m.eval()
    model, sess = _export(m, x, dynamic_axes={"input": axes})
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert {i: dims[i].dim_param for i in axes} == axes
    for shape in shapes:
        _run_seq(m, sess, shape, x.dtype)


def test_lstm_sequence_length_cannot_be_dynamic_and_says_why():
    """ember's LSTM layer is one op exported with its steps unrolled (and with projections a Python loop over
    steps, one traced block per step), so the sequence length cannot be a dynamic axis."""
    m = nn.LSTM(4, 6, batch_first=True).eval()
    with pytest.raises(ember.onnx.OnnxExporterError, match="sequence length cannot be a dynamic axis"):
        ember.onnx.export(m, ember.randn(2, 5, 4), io.BytesIO(), dynamic_axes={"input": {0: "batch", 1: "seq"}})
    m = nn.LSTM(4, 6, batch_first=True, proj_size=3).eval()
    with pytest.raises(ember.onnx.OnnxExporterError, match="control flow depends on the size"):
        ember.onnx.export(m, ember.randn(2, 5, 4), io.BytesIO(), dynamic_axes={"input": {0: "batch", 1: "seq"}})


def test_sizes_used_as_numbers_follow_the_dim_and_other_dependence_is_refused():
    class MeanOverBatch(nn.Module):           # an int scalar (x.shape[0]) follows the dim: computed at run time
        def forward(self, x):
            return x.sum(0) / x.shape[0]

    class FloatOfSize(nn.Module):             # a float made from the size cannot be expressed
        def forward(self, x):
            return x * (1.0 / x.shape[0])

    class ArangeOfSize(nn.Module):            # a constant tensor whose values (not only shape) follow the size
        def forward(self, x):
            return x + ember.tensor([[float(i)] for i in range(x.shape[0])])

    m = MeanOverBatch()
    _, sess = _export(m, ember.randn(3, 4), dynamic_axes={"input": [0]})
    for b in (1, 8):
        x = ember.randn(b, 4)
        _close(sess.run(None, {"input": x.numpy()})[0], m(x))
    with pytest.raises(ember.onnx.OnnxExporterError, match="cannot express as a size"):
        ember.onnx.export(FloatOfSize(), ember.randn(3, 4), io.BytesIO(), dynamic_axes={"input": [0]})
    with pytest.raises(ember.onnx.OnnxExporterError, match="changes its values"):
        ember.onnx.export(ArangeOfSize(), ember.randn(3, 4), io.BytesIO(), dynamic_axes={"input": [0]})


# ---------------------------------------------------------------- quantized models (QDQ)
def _quantized(arch, mode):
    pytest.importorskip("ember_quantized", reason="quantized models need the ember-quantized plugin")
    from ember.examples.digits_quantize import quantize_model
    ember.manual_seed(0)
    x, y = ember.randn(256, 1, 8, 8), ember.randint(0, 10, (256,))
    return quantize_model(build_model(arch), mode, (x, y), calib_batches=2, qat_epochs=1)


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
@pytest.mark.parametrize("mode", ["static", "qat"])
def test_quantized_digits_model_exports_as_qdq_within_one_step(arch, mode):
    q = _quantized(arch, mode)
    model, sess = _export(q, ember.randn(4, 1, 8, 8), input_names=["image"], output_names=["logits"],
                          dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    kinds = {n.op_type for n in model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= kinds and ({"Conv"} <= kinds) == (arch == "cnn")
    weights = [i for i in model.graph.initializer if i.name.endswith("_packed_params.weight")]
    assert weights and all(w.data_type == onnx.TensorProto.INT8 for w in weights)     # int8 weights, not floats
    step = [m.scale for m in q.modules() if isinstance(getattr(m, "scale", None), float)][-1]
    for b in (1, 200):
        x = ember.randn(b, 1, 8, 8)
        got, want = sess.run(None, {"image": x.numpy()})[0], q(x).numpy()
        diff = np.abs(got - want)
        assert got.shape == want.shape and diff.max() <= step * (1 + 1e-5)      # at most one quantization step
        assert (diff > 0).mean() < 0.05                                         # and only at rounding ties


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
def test_dynamically_quantized_model_exports_with_its_reduced_range(arch):
    """Activations are quantized per call over [0, 127] as ember's (and fbgemm's) dynamic linear does; outputs
    agree except where an activation rounds the other way at a tie (one step of that activation)."""
    q = _quantized(arch, "dynamic")
    model, sess = _export(q, ember.randn(4, 1, 8, 8), dynamic_axes={"input": [0]})
    assert {"QuantizeLinear", "DequantizeLinear", "ReduceMin", "ReduceMax"} <= {n.op_type for n in model.graph.node}
    for b in (1, 40):
        x = ember.randn(b, 1, 8, 8)
        got, want = sess.run(None, {"input": x.numpy()})[0], q(x).detach().numpy()
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 0.02 * np.abs(want).max()
        assert (got.argmax(1) == want.argmax(1)).mean() >= 0.95


def test_quantized_params_are_refused_as_graph_inputs():
    q = _quantized("mlp", "static")
    with pytest.raises(ember.onnx.OnnxExporterError, match="export_params=False with the quantized parameter"):
        ember.onnx.export(q, ember.randn(2, 1, 8, 8), io.BytesIO(), export_params=False)


def test_digits_example_exports_onnx(tmp_path):
    from ember.examples import digits
    path = str(tmp_path / "digits.onnx")
    r = digits.main(["--model", "cnn", "--epochs", "1", "--no-progress", "--export-onnx", path])
    onnx.checker.check_model(onnx.load(path))
    assert r["onnx"]["agree"] == 360 and r["onnx"]["max_abs_diff"] < 1e-4


def test_digits_example_exports_the_int8_model_beside_the_float_one(tmp_path):
    pytest.importorskip("ember_quantized", reason="--quantize needs the ember-quantized plugin")
    from ember.examples import digits
    path = str(tmp_path / "digits.onnx")
    r = digits.main(["--model", "mlp", "--epochs", "1", "--no-progress", "--quantize", "static",
                     "--export-onnx", path])
    q = r["quantized"]["onnx"]
    assert q["path"] == str(tmp_path / "digits.int8.onnx")
    onnx.checker.check_model(onnx.load(q["path"]))
    assert q["agree"] >= 355 and q["max_diff_steps"] <= 1.0 + 1e-5


def test_docs_table_is_generated_from_the_mapping():
    import pathlib
    from ember.onnx._export import table_markdown
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "jit.md").read_text()
    assert table_markdown() in doc


def test_training_mode_enum_and_select_model_mode_as_torch():
    torch = pytest.importorskip("torch")
    for name in ("EVAL", "PRESERVE", "TRAINING"):
        assert int(getattr(ember.onnx.TrainingMode, name)) == int(getattr(torch.onnx.TrainingMode, name))
    assert issubclass(ember.onnx.UnsupportedOperatorError, ember.onnx.OnnxExporterError)
    assert issubclass(ember.onnx.OnnxExporterError, RuntimeError)
    for lib, m in ((ember, ember.nn.Dropout()), (torch, torch.nn.Dropout())):
        with lib.onnx.select_model_mode_for_export(m, lib.onnx.TrainingMode.EVAL):
            assert not m.training
        assert m.training
    with pytest.raises(NotImplementedError, match="training mode"):
        ember.onnx.export(nn.Linear(2, 2), ember.ones(1, 2), io.BytesIO(), training=ember.onnx.TrainingMode.TRAINING)
    proto = ember.onnx.export(nn.Linear(2, 2).eval(), ember.ones(1, 2), training=ember.onnx.TrainingMode.PRESERVE)
    assert [n.op_type for n in proto.graph.node] == ["Gemm", "Identity"]


@pytest.mark.parametrize("opset", [17, 18])
def test_safe_softmax_exports_with_fully_masked_rows_as_zeros(opset):
    """Attention with a float mask that masks every key of one query row: ember's _safe_softmax gives that row
    zeros; the exported Softmax alone would give NaN, so the mapping selects zeros where the row's max is -inf."""
    mask = ember.zeros(4, 4)
    mask[1] = float("-inf")
    mask[2, 3] = float("-inf")

    class Attn(nn.Module):
        def forward(self, q):
            return nn.functional.scaled_dot_product_attention(q, q * 0.5, q + 1, attn_mask=mask)
    q = ember.randn(2, 3, 4, 8)
    want = Attn()(q)
    assert bool((want[:, :, 1] == 0).all()) and not bool(want.isnan().any())
    model, sess = _export(Attn(), q, opset_version=opset)
    assert "IsInf" in {node.op_type for node in model.graph.node}
    _close(sess.run(None, {model.graph.input[0].name: q.numpy()})[0], want)


@pytest.mark.parametrize("opset", [13, 17, 18])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_exports_as_one_node_from_opset_17(opset, affine):
    """native_layer_norm: ONNX's LayerNormalization from opset 17 on, the decomposition before; both run in
    onnxruntime as ember (the normalization over two trailing dims, with and without weight and bias)."""
    ember.manual_seed(0)
    m = nn.LayerNorm([4, 6], elementwise_affine=affine)
    if affine:
        with ember.no_grad():
            m.weight.uniform_(0.5, 1.5)
            m.bias.normal_()
    x = ember.randn(3, 4, 6) * 3 + 1
    model, sess = _export(m, x, opset_version=opset)
    ops = {node.op_type for node in model.graph.node}
    assert ("LayerNormalization" in ops) == (opset >= 17)
    _close(sess.run(None, {model.graph.input[0].name: x.numpy()})[0], m(x))

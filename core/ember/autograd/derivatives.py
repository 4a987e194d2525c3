"""The derivative table: one entry per differentiable op of the core op set.

Each entry maps an op to a formula per differentiable input, in the style of
PyTorch's derivatives.yaml (see ``_formula`` for the names a formula may use). The
formulas are written with ember ops, so every device plugin (a vendor's included) gets
gradients, and — because those ops are recorded again when ``create_graph=True`` —
higher-order gradients, without writing a backward kernel.

Ops missing from the table whose outputs are all integer / bool (argmax, eq, nonzero,
...) are not differentiable; a floating output of an op missing from the table gets a
node that raises "the derivative for '<op>' is not implemented." when reached.
"""
from __future__ import annotations

import math

from .. import _dispatch
from . import _helpers
from ._formula import Derivative

__all__ = ["DERIVATIVES", "install", "register"]

G = "grad"
ZERO = "zeros_like(grad)"     # piecewise-constant ops (floor, round, ...): PyTorch's zero gradient

#: op name -> {input: formula}; optional "name" (the node name) and "nondiff" (output indices)
DERIVATIVES = {
    # ---------------------------------------------------------------- unary elementwise
    "neg": {"self": "-grad"},
    "abs": {"self": "grad * self.sgn()"},        # sgn = sign for real input; z / abs(z) for complex (PyTorch)
    "sign": {"self": ZERO}, "sgn": {"self": "sgn_grad(grad, self, result)"}, "floor": {"self": ZERO}, "ceil": {"self": ZERO},
    "trunc": {"self": ZERO}, "round": {"self": ZERO},
    "exp": {"self": "grad * result.conj()"},
    "exp2": {"self": "grad * result.conj() * math.log(2.0)"},
    "log": {"self": "grad / self.conj()"},
    "log2": {"self": "grad / (self.conj() * math.log(2.0))"},
    "log10": {"self": "grad / (self.conj() * math.log(10.0))"},
    "log1p": {"self": "grad / (self + 1).conj()"},
    "expm1": {"self": "grad * (result + 1).conj()"},
    "sqrt": {"self": "grad / (2 * result.conj())"},
    "rsqrt": {"self": "-0.5 * grad * result.pow(3).conj()"},
    "square": {"self": "2 * grad * self.conj()"},
    "sin": {"self": "grad * self.cos().conj()"},
    "cos": {"self": "-grad * self.sin().conj()"},
    "tan": {"self": "grad * (1 + result.square()).conj()"},
    "asin": {"self": "grad * (1 - self.square()).rsqrt().conj()"},
    "acos": {"self": "-grad * (1 - self.square()).rsqrt().conj()"},
    "atan": {"self": "grad / (1 + self.square()).conj()"},
    "sinh": {"self": "grad * self.cosh().conj()"},
    "cosh": {"self": "grad * self.sinh().conj()"},
    "tanh": {"self": "grad * (1 - result.square()).conj()"},
    "asinh": {"self": "grad * (self.square() + 1).rsqrt().conj()"},
    "acosh": {"self": "grad * ((self + 1).rsqrt() * (self - 1).rsqrt()).conj()"},   # right off the real axis too
    "atanh": {"self": "grad / (1 - self.square()).conj()"},
    "sigmoid": {"self": "grad * (result * (1 - result)).conj()"},
    "erf": {"self": "grad * (2 / math.sqrt(math.pi)) * (-self.square()).exp()"},
    "erfc": {"self": "grad * (-2 / math.sqrt(math.pi)) * (-self.square()).exp()"},
    "erfinv": {"self": "grad * (math.sqrt(math.pi) / 2) * result.square().exp()"},
    "frac": {"self": G},
    "reciprocal": {"self": "-grad * result.square().conj()"},
    "positive": {"self": G},
    "nan_to_num": {"self": "nan_to_num_grad(grad, self)"},
    # ---------------------------------------------------------------- binary elementwise
    "add": {"self": G, "other": "scale(grad, alpha)"},
    "sub": {"self": G, "other": "-scale(grad, alpha)"},
    "mul": {"self": "grad * cj(other)", "other": "grad * cj(self)"},
    "true_divide": {"self": "grad / cj(other)", "other": "-grad * cj(self / (other * other))",
                    "name": "DivBackward0"},
    "floor_divide": {"self": ZERO, "other": ZERO},
    "div_trunc": {"self": ZERO, "other": ZERO, "name": "DivBackward2"},
    "remainder": {"self": G, "other": "-grad * floor_divide(self, other)"},
    "fmod": {"self": G, "other": "-grad * div(self, other, rounding_mode='trunc')"},
    "atan2": {"self": "grad * other * atan2_recip(self, other)", "other": "-grad * self * atan2_recip(self, other)"},
    "hypot": {"self": "grad * self / result", "other": "grad * other / result"},
    "copysign": {"self": "copysign_grad(grad, self, result)", "other": ZERO},
    "maximum": {"self": "minmax_grad(grad, self, other, True)", "other": "minmax_grad(grad, other, self, True)"},
    "minimum": {"self": "minmax_grad(grad, self, other, False)", "other": "minmax_grad(grad, other, self, False)"},
    "fmax": {"self": "fminmax_grad(grad, self, other, True)", "other": "fminmax_grad(grad, self, other, True, True)"},
    "fmin": {"self": "fminmax_grad(grad, self, other, False)",
             "other": "fminmax_grad(grad, self, other, False, True)"},
    "pow": {"self": "pow_self_grad(grad, self, exponent)", "exponent": "pow_exponent_grad(grad, self, exponent, result)"},
    "where": {"input": "where(condition, grad, zeros_like(grad))", "other": "where(condition, zeros_like(grad), grad)"},
    "clamp": {"self": "clamp_grad(grad, self, min, max)", "min": "clamp_bound_grad(grad, self, min, max, True)",
              "max": "clamp_bound_grad(grad, self, min, max, False)"},
    "lerp": {"self": "grad * (1 - weight)", "end": "grad * weight", "weight": "grad * (end - self)"},
    "addcmul": {"self": G, "tensor1": "grad * tensor2 * value", "tensor2": "grad * tensor1 * value"},
    "addcdiv": {"self": G, "tensor1": "grad * value / tensor2", "tensor2": "-grad * value * tensor1 / tensor2.square()"},
    # ---------------------------------------------------------------- reductions and scans
    "sum": {"self": "reduce_grad(grad, self_shape, dim, keepdim)"},
    "nansum": {"self": "masked_grad(reduce_grad(grad, self_shape, dim, keepdim), self.isnan().logical_not())"},
    "mean": {"self": "reduce_grad(grad, self_shape, dim, keepdim) / count(self_shape, dim)"},
    "nanmean": {"self": "nanmean_grad(grad, self, dim, keepdim)"},
    "prod": {"self": "prod_grad(grad, self, result, dim, keepdim)"},
    "amax": {"self": "evenly_distribute(grad, self, result, dim, keepdim)"},
    "amin": {"self": "evenly_distribute(grad, self, result, dim, keepdim)"},
    "max": {"self": "evenly_distribute(grad, self, result, nan_aware=True)", "name": "MaxBackward1"},
    "min": {"self": "evenly_distribute(grad, self, result, nan_aware=True)", "name": "MinBackward1"},
    "max_dim": {"self": "value_selecting(grad, dim, indices, self_shape, keepdim)", "name": "MaxBackward0"},
    "min_dim": {"self": "value_selecting(grad, dim, indices, self_shape, keepdim)", "name": "MinBackward0"},
    "aminmax": {"self": "evenly_distribute(grads[0], self, result0, dim, keepdim) + "
                        "evenly_distribute(grads[1], self, result1, dim, keepdim)"},
    "median": {"self": "evenly_distribute(grad, self, result, nan_aware=True)", "name": "MedianBackward0"},
    "nanmedian": {"self": "evenly_distribute(grad, self, result, nan_aware=True)", "name": "NanmedianBackward0"},
    "median_dim": {"self": "value_selecting(grad, dim, indices, self_shape, keepdim)", "name": "MedianBackward1"},
    "nanmedian_dim": {"self": "value_selecting(grad, dim, indices, self_shape, keepdim)",
                      "name": "NanmedianBackward1"},
    "mode": {"self": "value_selecting(grad, dim, indices, self_shape, keepdim)"},
    "kthvalue": {"self": "value_selecting(grad, dim, indices, self_shape, keepdim)"},
    "sort": {"self": "sort_grad(grad, dim, indices, self_shape)"},
    "topk": {"self": "sort_grad(grad, dim, indices, self_shape)"},
    "cummax": {"self": "sort_grad(grad, dim, indices, self_shape)"},
    "cummin": {"self": "sort_grad(grad, dim, indices, self_shape)"},
    "var": {"self": "var_grad(grad, self, dim, correction, keepdim)"},
    "std": {"self": "var_grad((grad / (2 * result)).masked_fill(result == 0, 0), self, dim, correction, keepdim)"},
    "norm": {"self": "norm_grad(grad, self, p, result, dim, keepdim)"},
    "linalg_vector_norm": {"self": "norm_grad(grad, self, ord, result, dim, keepdim)"},
    "linalg_matrix_norm": {"self": "matrix_norm_grad(grad, self, ord, result, dim, keepdim)"},
    "logsumexp": {"self": "logsumexp_grad(grad, self, result, dim, keepdim)"},
    "cumsum": {"self": "cumsum_grad(grad, dim)"},
    "cumprod": {"self": "cumprod_grad(grad, self, dim)"},
    # ---------------------------------------------------------------- linear algebra
    "mm": {"self": "grad.mm(mat2.mH)", "mat2": "self.mH.mm(grad)"},
    "bmm": {"self": "grad.bmm(mat2.mH)", "mat2": "self.mH.bmm(grad)"},
    "mv": {"self": "grad.unsqueeze(-1) * vec.conj()", "vec": "self.mH.mv(grad)"},
    "dot": {"self": "grad * tensor.conj()", "tensor": "grad * self.conj()"},
    "vdot": {"self": "grad.conj() * other", "other": "grad * self"},
    "matmul": {"self": "matmul_grad(grad, self, other, 'self')", "other": "matmul_grad(grad, self, other, 'other')"},
    "addmm": {"self": "scale(grad, beta)", "mat1": "scale(grad.mm(mat2.t()), alpha)",
              "mat2": "scale(mat1.t().mm(grad), alpha)"},
    "addmv": {"self": "scale(grad, beta)", "mat": "scale(grad.unsqueeze(-1) * vec, alpha)",
              "vec": "scale(mat.t().mv(grad), alpha)"},
    "baddbmm": {"self": "scale(grad, beta)", "batch1": "scale(grad.bmm(batch2.mT), alpha)",
                "batch2": "scale(batch1.mT.bmm(grad), alpha)"},
    "addbmm": {"self": "scale(grad, beta)",
               "batch1": "scale(grad.expand(batch1_shape[:1] + grad.shape).bmm(batch2.mT), alpha)",
               "batch2": "scale(batch1.mT.bmm(grad.expand(batch2_shape[:1] + grad.shape)), alpha)"},
    "einsum": {"tensors": "[einsum_grad(grad, equation, [cj(t) for t in tensors], i) for i in range(len(tensors))]"},
    # ---------------------------------------------------------------- shape and indexing
    "cat": {"tensors": "cat_grad(grad, tensors_shape, dim)"},
    "flip": {"self": "grad.flip(dims)"},
    "roll": {"self": "roll_grad(grad, shifts, dims)"},
    "repeat": {"self": "repeat_grad(grad, self_shape, repeats)"},
    "repeat_interleave_tensor": {"self": "repeat_interleave_grad(grad, self_shape, repeats, dim)",
                                 "name": "RepeatInterleaveBackward0"},
    "tril": {"self": "grad.tril(diagonal)"},
    "triu": {"self": "grad.triu(diagonal)"},
    "take": {"self": "take_grad(grad, self_shape, index)"},
    "gather": {"self": "zeros(self_shape, dtype=grad.dtype, device=grad.device).scatter_add(dim, index, grad)"},
    "index_select": {"self": "select_grad_along(grad, dim, index, self_shape)"},
    "index": {"self": "zeros(self_shape, dtype=grad.dtype, device=grad.device).index_put_(indices, grad, True)"},
    "index_add": {"self": G, "source": "scale(index_select_like(grad, dim, index, source_shape), alpha)"},
    "index_copy": {"self": "grad.index_fill(dim, index, 0)",
                   "source": "index_select_like(grad, dim, index, source_shape)"},
    "index_fill": {"self": "grad.index_fill(dim, index, 0)"},
    "index_put": {"self": "grad if accumulate else grad.index_put(indices, zeros((), dtype=grad.dtype, device=grad.device))",
                  "values": "index_put_values_grad(grad, indices, values_shape)"},
    "masked_fill": {"self": "grad.masked_fill(mask, 0)"},
    "masked_scatter": {"self": "grad.masked_fill(mask, 0)", "source": "masked_scatter_grad(grad, mask, source_shape)"},
    "masked_select": {"self": "masked_select_grad(grad, self_shape, mask)"},
    "scatter": {"self": "scatter_self_grad(grad, dim, index, reduce)", "src": "scatter_src_grad(grad, dim, index, reduce)"},
    "scatter_add": {"self": G, "src": "grad.gather(dim, index)"},
    "scatter_reduce": {"self": "scatter_reduce_grad(grad, self, index, src, result, dim, reduce, include_self, 'self')",
                       "src": "scatter_reduce_grad(grad, self, index, src, result, dim, reduce, include_self, 'src')"},
    # ---------------------------------------------------------------- copies, fills, random
    "copy_": {"self": ZERO, "src": G, "name": "CopyBackwards"},      # overwritten: zeros, as PyTorch
    "fill_": {"self": ZERO, "name": "FillBackward0"},
    "normal": {"self": ZERO}, "uniform": {"self": ZERO}, "exponential": {"self": ZERO},
    "random": {"self": ZERO}, "bernoulli_scalar": {"self": ZERO, "name": "BernoulliBackward0"},
    "bernoulli_tensor": {"self": ZERO, "p": ZERO, "name": "BernoulliBackward1"},
    "normal_tensor": {"mean": G, "std": "grad * (result - mean) / std", "name": "NormalBackward3"},
    # ---------------------------------------------------------------- nn ops (_ops/_nn.py)
    "linear": {"input": "grad.matmul(cj(weight))", "weight": "linear_weight_grad(grad, cj(input))",
               "bias": "linear_bias_grad(grad)", "name": "AddmmBackward0"},
    "conv2d": {"input": "conv2d_backward_input(grad, weight, input_shape, stride, padding, dilation, groups)",
               "weight": "conv2d_backward_weight(grad, input, weight_shape, stride, padding, dilation, groups)",
               "bias": "grad.sum(0).sum((1, 2))", "name": "ConvolutionBackward0"},   # batch first: ~7x faster on cpu
    # the backward ops are bilinear in (grad_output, weight) / (grad_output, input): their derivatives are
    # the forward convolution and the other backward op
    "conv2d_backward_input": {
        "grad_output": "conv2d(grad, weight, None, stride, padding, dilation, groups)",
        "weight": "conv2d_backward_weight(grad_output, grad, weight_shape, stride, padding, dilation, groups)",
        "name": "ConvolutionBackwardBackward0"},
    "conv2d_backward_weight": {
        "grad_output": "conv2d(input, grad, None, stride, padding, dilation, groups)",
        "input": "conv2d_backward_input(grad_output, grad, input_shape, stride, padding, dilation, groups)",
        "name": "ConvolutionBackwardBackward1"},
    "relu": {"self": "threshold_backward(grad, result, 0)"},
    "threshold_backward": {"grad_output": "threshold_backward(grad, self, threshold)",
                           "name": "ThresholdBackwardBackward0"},
    "softmax": {"self": "softmax_grad(grad, result, dim)", "name": "SoftmaxBackward0"},
    "_safe_softmax": {"self": "softmax_grad(grad, result, dim)", "name": "SafeSoftmaxBackward0"},
    "log_softmax": {"self": "log_softmax_grad(grad, result, dim)", "name": "LogSoftmaxBackward0"},
    "_softmax_backward_data": {
        "grad_output": "softmax_grad(grad, output, dim)",
        "output": "grad * (grad_output - (grad_output * output).sum(dim, keepdim=True)) - "
                  "grad_output * (grad * output).sum(dim, keepdim=True)",
        "name": "SoftmaxBackwardDataBackward0"},
    "_log_softmax_backward_data": {
        "grad_output": "grad - (grad * output.exp()).sum(dim, keepdim=True)",
        "output": "-(grad_output.sum(dim, keepdim=True) * output.exp() * grad)",
        "name": "LogSoftmaxBackwardDataBackward0"},
    "nll_loss": {"self": "nll_loss_backward(grad, self, target, weight, reduction, ignore_index)",
                 "name": "NllLossBackward0"},
    "nll_loss_backward": {"grad_output": "nll_loss(grad, target, weight, reduction, ignore_index)",
                          "name": "NllLossBackwardBackward0"},
    "im2col": {"self": "col2im(grad, self_shape[-2:], kernel_size, dilation, padding, stride)"},
    "col2im": {"self": "im2col(grad, kernel_size, dilation, padding, stride)"},
    "max_pool2d_with_indices": {"self": "max_pool2d_with_indices_backward(grad, self, kernel_size, stride, padding, "
                                        "dilation, ceil_mode, result1)"},
    "max_pool2d_with_indices_backward": {"grad_output": "max_pool_double_backward(grad, indices)"},
    "constant_pad_nd": {"self": "pad_grad(grad, pad)"},
    # ---------------------------------------------------------------- fft primitives (FunctionsManual.cpp's adjoints)
    "fft_c2c": {"self": "fft_c2c_grad(grad, dim, normalization, forward)", "name": "FftC2CBackward0"},
    "fft_r2c": {"self": "fft_r2c_grad(grad, self_shape, dim, normalization, onesided)", "name": "FftR2CBackward0"},
    "fft_c2r": {"self": "fft_c2r_grad(grad, self_shape, dim, normalization)", "name": "FftC2RBackward0"},
    "embedding": {"weight": "embedding_backward(grad, indices, weight_shape[0], padding_idx, scale_grad_by_freq, "
                            "sparse)"},
    # ---------------------------------------------------------------- special functions (ember.special)
    "digamma": {"self": "grad * special_op('polygamma')(1, self)"},
    "lgamma": {"self": "grad * special_op('digamma')(self)"},
    "polygamma": {"self": "grad * special_op('polygamma')(n + 1, self)"},
    "mvlgamma": {"self": "mvlgamma_grad(grad, self, p)"},
    "i0": {"self": "grad * special_op('special_i1')(self)"},
    "special_i0e": {"self": "grad * (special_op('special_i1e')(self) - self.sgn() * result)",
                    "name": "SpecialI0EBackward0"},
    "special_i1": {"self": "i1_grad(grad, self, result)"},
    "special_i1e": {"self": "i1e_grad(grad, self, result)", "name": "SpecialI1EBackward0"},
    "sinc": {"self": "sinc_grad(grad, self)"},
    "special_entr": {"self": "grad * -(self.log() + 1)"},
    "special_erfcx": {"self": "grad * (2 * self * result - 2 / math.sqrt(math.pi))"},
    "special_ndtri": {"self": "grad * math.sqrt(2 * math.pi) * (result.square() / 2).exp()"},
    "special_log_ndtr": {"self": "grad / math.sqrt(2 * math.pi) * (-(result + self.square() / 2)).exp()"},
    "logit": {"self": "logit_grad(grad, self, eps)"},
    "xlogy": {"self": "xlogy(grad, other).masked_fill((self == 0) & (other <= 0), 0.0)",
              "other": "grad * self / other"},
    "special_xlog1py": {"self": "special_op('special_xlog1py')(grad, other).masked_fill((self == 0) & (other <= -1), "
                                "0.0)",
                        "other": "grad * self / (other + 1)", "name": "SpecialXlog1PyBackward0"},
    "igamma": {"self": "not_implemented('igamma: input')", "other": "igamma_other_grad(grad, self, other)"},
    "igammac": {"self": "not_implemented('igammac: input')", "other": "-igamma_other_grad(grad, self, other)"},
    "special_zeta": {"self": "not_implemented('zeta')", "other": "zeta_other_grad(grad, self, other)"},
}

#: ops whose results are not differentiable although floating (PyTorch's special Bessel functions and
#: orthogonal polynomials: the results do not require grad)
NONDIFFERENTIABLE = [
    "special_airy_ai", "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
    "special_modified_bessel_i0", "special_modified_bessel_i1", "special_modified_bessel_k0",
    "special_modified_bessel_k1", "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
    "special_spherical_bessel_j0", "special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
    "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w", "special_shifted_chebyshev_polynomial_t",
    "special_shifted_chebyshev_polynomial_u", "special_shifted_chebyshev_polynomial_v",
    "special_shifted_chebyshev_polynomial_w", "special_hermite_polynomial_h", "special_hermite_polynomial_he",
    "special_laguerre_polynomial_l", "special_legendre_polynomial_p",
]


#: ops whose formulas above are right for complex values too (PyTorch's convention, the conjugate
#: Wirtinger derivative: the gradient is grad * conj(d out / d in), so a real loss L of z = x + iy
#: gives dL/dx + i dL/dy): linear maps with real coefficients, index / shape moves, the fft
#: primitives, abs (grad * sgn), and the holomorphic ops whose formulas write the conj explicitly as
#: derivatives.yaml does (mul, div, exp, log, sqrt, pow, the trigonometric / hyperbolic functions,
#: mm / bmm / matmul: grad @ other.mH). The views real / imag / view_as_real / view_as_complex have
#: their own node (``_complex``). A complex result of any other op gets a node that raises when
#: reached (``_record.complex_ok``) rather than a wrong gradient.
COMPLEX_SAFE = frozenset({
    "fft_c2c", "fft_r2c", "fft_c2r", "abs", "add", "sub", "neg", "positive", "sum", "mean", "nansum", "cumsum",
    "cat", "flip", "roll", "repeat", "constant_pad_nd", "copy_", "index", "index_select", "gather", "take",
    "tril", "triu", "where", "masked_fill", "col2im", "im2col",
    # complex autograd (issue 18): formulas with the conj written out
    "mul", "true_divide", "exp", "log", "sqrt", "square", "sin", "cos", "sinh", "cosh", "tanh", "sigmoid",
    "reciprocal", "pow", "mm", "bmm", "mv", "dot", "vdot", "matmul", "sgn", "prod", "linear", "einsum",
    "exp2", "log2", "log10", "log1p", "expm1", "rsqrt", "tan", "asin", "acos", "atan", "asinh", "acosh", "atanh",
    # second pass: ember.linalg's formulas (``_linalg_formulas``) write A^-H / conj(det) as FunctionsManual does
    "linalg_det", "linalg_slogdet", "linalg_inv_ex", "linalg_solve_ex", "linalg_solve_triangular", "linalg_cholesky_ex",
    "linalg_matrix_exp", "linalg_lu_factor_ex", "linalg_lu_solve", "cumprod",
    # third pass: the decompositions with their phase (gauge) checks, and householder_product
    "linalg_qr", "linalg_eigh", "linalg_eig", "linalg_svd", "linalg_householder_product", "ormqr",
})


def _namespace():
    import ember
    from . import _formula_helpers, _special_helpers
    ns = {k: getattr(ember, k) for k in dir(ember) if not k.startswith("_")}
    ns.update({k: getattr(_helpers, k) for k in _helpers.__all__})
    ns.update({k: getattr(_formula_helpers, k) for k in _formula_helpers.__all__})
    ns.update({k: getattr(_special_helpers, k) for k in _special_helpers.__all__})
    ns["math"] = math
    return ns


def register(op_name, formulas: dict, *, name=None, nondiff_outputs=(), namespace=None):
    """Compile ``formulas`` (input name -> expression) as the derivative of op ``op_name``."""
    from ._fastpath import make_recorder
    op = _dispatch.lookup(op_name)
    op.autograd = Derivative(op, formulas, name=name, nondiff_outputs=nondiff_outputs,
                             namespace=namespace if namespace is not None else _namespace())
    op.rec = make_recorder(op, op.autograd)
    return op.autograd


def install():
    """Compile the table into every declared op's ``OpDef.autograd`` (and ember.linalg's decompositions, whose
    formulas live in ``_linalg_formulas``)."""
    from . import _linalg_formulas
    ns = _namespace()
    for op_name, entry in DERIVATIVES.items():
        entry = dict(entry)
        name = entry.pop("name", None)
        register(op_name, entry, name=name, namespace=ns)
    ns = {**ns, **_linalg_formulas.HELPERS}
    for op_name, (formulas, nondiff) in _linalg_formulas.LINALG_DERIVATIVES.items():
        register(op_name, formulas, nondiff_outputs=nondiff, namespace=ns)
    for op_name in NONDIFFERENTIABLE:
        register(op_name, {}, nondiff_outputs=(0,), namespace=ns)

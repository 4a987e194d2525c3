"""Samplers the distributions need beyond ember's random ops.

``_standard_gamma(alpha)``: Gamma(alpha, 1) draws, differentiable in ``alpha`` (matches what
torch._standard_gamma gives rsample). Forward: Marsaglia & Tsang (2000), "A simple method for generating
gamma variables", vectorised over ember.randn / ember.rand (so it runs on any device and follows
ember.manual_seed); alpha < 1 uses the boost x * U^(1/alpha) with x ~ Gamma(alpha + 1). Backward: the
implicit reparameterisation gradient dx/dalpha = -(dF/dalpha)(alpha, x) / f(x; alpha), F the regularised
lower incomplete gamma (ember.special.gammainc) and f the density. dF/dalpha has no closed form; it is taken
by a central difference in float64 with step 1e-4 * alpha (tested to agree within 1e-5 relative with the
derivative of scipy.special.gammaincinv, far below the Monte Carlo noise of any estimator that uses it).
PyTorch instead uses a fitted approximation (_standard_gamma_grad); the two agree to its accuracy
(tests/distributions/test_rsample_grad.py).

``_host_draw``: discrete draws ember has no op for (Poisson, Binomial) come from numpy on the host, seeded
by one draw from ember's generator so that ember.manual_seed still makes them repeatable.
"""
import numpy as np

import ember


def _marsaglia_tsang(alpha):
    boost = alpha < 1
    a = ember.where(boost, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    out = ember.zeros_like(a)
    done = ember.zeros(a.shape, dtype=ember.bool, device=a.device)
    while not bool(done.all()):   # each round accepts > 95% of the rest (Marsaglia & Tsang, section 3)
        x = ember.randn(a.shape, dtype=a.dtype, device=a.device)
        v = (1 + c * x) ** 3
        u = ember.rand(a.shape, dtype=a.dtype, device=a.device)
        positive = v > 0
        log_v = ember.where(positive, v, ember.ones_like(v)).log()
        accept = positive & (u.log() < 0.5 * x * x + d - d * v + d * log_v)
        out = ember.where(accept & ~done, d * v, out)
        done = done | accept
    u = ember.rand(a.shape, dtype=a.dtype, device=a.device)
    out = ember.where(boost, out * u.pow(1.0 / alpha), out)
    return out.clamp(min=ember.finfo(a.dtype).tiny)


def _standard_gamma_grad(alpha, x):
    """dx/dalpha of x = F⁻¹(u; alpha) at fixed u (see the module docstring); float64 inside."""
    a, x64 = alpha.double(), x.double()
    h = 1e-4 * a
    dF_da = (ember.special.gammainc(a + h, x64) - ember.special.gammainc(a - h, x64)) / (2 * h)
    log_pdf = (a - 1) * x64.log() - x64 - ember.lgamma(a)
    pdf = log_pdf.exp()
    grad = ember.where(pdf > 0, -dF_da / ember.where(pdf > 0, pdf, ember.ones_like(pdf)), ember.zeros_like(pdf))
    return grad.to(alpha.dtype)


class _StandardGamma(ember.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _marsaglia_tsang(alpha.detach())
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        alpha, x = ctx.saved_tensors
        return grad_output * _standard_gamma_grad(alpha.detach(), x.detach())


def _standard_gamma(alpha):
    """Gamma(alpha, 1) samples of alpha's shape and dtype, differentiable in alpha (alpha > 0)."""
    return _StandardGamma.apply(alpha)


def _host_draw(draw, *params, dtype, device):
    """``draw(numpy_generator, *numpy_params)`` on the host, as an ember tensor of ``dtype`` on ``device``."""
    seed = int(ember.randint(0, 2 ** 31 - 1, (), device="cpu").item())
    rng = np.random.default_rng(seed)
    arrays = [p.detach().cpu().numpy() for p in params]
    return ember.tensor(np.asarray(draw(rng, *arrays)), dtype=dtype, device=device)

"""A variational autoencoder on scikit-learn's 8x8 handwritten digits.

Runs unchanged under PyTorch and ember::

    python examples/vae_digits.py            # import torch
    python examples/vae_digits.py --ember    # import ember as torch

The reparameterisation trick is written by hand: ``z = mu + exp(logvar / 2) * eps``. With
``noise="numpy"`` (the default) ``eps`` comes from a seeded numpy generator, so both frameworks
train identically; with ``noise="framework"`` it is ``torch.randn_like(std)``, as a PyTorch user
would write it (the curves then agree only statistically).

``main(torch, steps, seed, noise)`` returns the per-step negative ELBO (nats per image: Bernoulli
reconstruction term on pixels in [0, 1] plus the KL divergence to N(0, I)).
"""
import math
import sys

import numpy as np


def load_pixels():
    """The 1797 digits as a float32 (1797, 64) numpy array scaled to [0, 1]."""
    from sklearn.datasets import load_digits
    return (load_digits().data / 16.0).astype(np.float32)


def numpy_init(torch, model, rng):
    """Overwrite the parameters from a numpy generator (matrices U(-1/sqrt(fan_in), +), biases 0)."""
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() > 1:
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
            else:
                p.zero_()


def build_model(torch, latent=4, hidden=64):
    nn = torch.nn

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 2 * latent))
            self.decoder = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, 64))

        def forward(self, x, eps=None):
            mu, logvar = self.encoder(x).chunk(2, dim=-1)
            std = torch.exp(0.5 * logvar)
            if eps is None:
                eps = torch.randn_like(std)
            z = mu + std * eps
            return self.decoder(z), mu, logvar

    return VAE()


def neg_elbo(torch, logits, x, mu, logvar):
    F = torch.nn.functional
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (rec + kl) / x.shape[0]


def main(torch, steps=40, seed=0, noise="numpy", batch_size=64, latent=4):
    if noise not in ("numpy", "framework"):
        raise ValueError(f"noise must be 'numpy' or 'framework', got {noise!r}")
    rng = np.random.default_rng(seed)
    pixels = load_pixels()
    model = build_model(torch, latent)
    numpy_init(torch, model, rng)
    if noise == "framework":
        torch.manual_seed(seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.from_numpy(pixels)),
                                         batch_size=batch_size, shuffle=False, drop_last=True)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    while len(losses) < steps:
        for (x,) in loader:
            eps = None
            if noise == "numpy":
                eps = torch.from_numpy(rng.standard_normal((x.shape[0], latent)).astype(np.float32))
            logits, mu, logvar = model(x, eps)
            loss = neg_elbo(torch, logits, x, mu, logvar)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
    return losses


if __name__ == "__main__":
    if "--ember" in sys.argv[1:]:
        import ember as torch
    else:
        import torch
    print(main(torch))

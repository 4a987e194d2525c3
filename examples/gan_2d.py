"""A GAN on a 2-D toy distribution: a ring of 8 Gaussians.

Runs unchanged under PyTorch and ember::

    python examples/gan_2d.py            # import torch
    python examples/gan_2d.py --ember    # import ember as torch

Generator and discriminator are small MLPs, trained alternately with ``nn.BCEWithLogitsLoss`` and
two Adam optimizers (the non-saturating generator loss). Real samples and the generator's latent
noise come from a seeded numpy generator, as do the initial weights, so both frameworks train
identically.

``main(torch, steps, seed, stats=None)`` returns the per-step discriminator losses; when ``stats``
is a dict it also gets ``"g_loss"`` (per step) and ``"radius_error"``: per step, the mean
| ||g(z)|| - R | of the generated batch, R the ring's radius -- a number that goes down as the
generator learns the distribution.
"""
import math
import sys

import numpy as np

RADIUS = 2.0


def real_batch(rng, n, modes=8, spread=0.05):
    """n points from 8 Gaussians on a circle of radius RADIUS (float32, shape (n, 2))."""
    angle = 2 * np.pi * rng.integers(0, modes, size=n) / modes
    centres = RADIUS * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return (centres + spread * rng.standard_normal((n, 2))).astype(np.float32)


def numpy_init(torch, model, rng):
    """Overwrite the parameters from a numpy generator (matrices U(-1/sqrt(fan_in), +), biases 0)."""
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() > 1:
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
            else:
                p.zero_()


def main(torch, steps=60, seed=0, stats=None, batch_size=64, z_dim=4, hidden=64):
    nn = torch.nn
    rng = np.random.default_rng(seed)
    G = nn.Sequential(nn.Linear(z_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                      nn.Linear(hidden, 2))
    D = nn.Sequential(nn.Linear(2, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, hidden), nn.LeakyReLU(0.2),
                      nn.Linear(hidden, 1))
    numpy_init(torch, G, rng)
    numpy_init(torch, D, rng)
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    ones = torch.ones(batch_size, 1)
    zeros = torch.zeros(batch_size, 1)
    d_losses, g_losses, radius_error = [], [], []
    for _ in range(steps):
        real = torch.from_numpy(real_batch(rng, batch_size))
        z = torch.from_numpy(rng.standard_normal((batch_size, z_dim)).astype(np.float32))
        fake = G(z)
        # discriminator: real -> 1, fake -> 0 (the generator is not updated by this loss)
        d_loss = bce(D(real), ones) + bce(D(fake.detach()), zeros)
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        # generator: make D call the fakes real
        g_loss = bce(D(fake), ones)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        d_losses.append(d_loss.item())
        g_losses.append(g_loss.item())
        radius_error.append((fake.detach().norm(dim=1) - RADIUS).abs().mean().item())
    if stats is not None:
        stats["g_loss"] = g_losses
        stats["radius_error"] = radius_error
    return d_losses


if __name__ == "__main__":
    if "--ember" in sys.argv[1:]:
        import ember as torch
    else:
        import torch
    stats = {}
    print(main(torch, stats=stats))
    print("radius error", stats["radius_error"][0], "->", stats["radius_error"][-1])

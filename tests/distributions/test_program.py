"""Small real programs that run unchanged under `import torch` and `import ember as torch` and print the
same numbers: a VAE ELBO step (Normal / Independent / Bernoulli / kl_divergence, reparameterised with given
noise) and a REINFORCE policy-gradient step with Categorical, each followed by an optimiser step."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

PROGRAM = textwrap.dedent('''
    import sys
    if sys.argv[1] == "ember":
        import ember as torch
    else:
        import torch
    nn = torch.nn
    D = torch.distributions
    Normal, Independent, Bernoulli, Categorical, kl_divergence = (D.Normal, D.Independent, D.Bernoulli,
                                                                   D.Categorical, D.kl_divergence)

    torch.set_default_dtype(torch.float64)

    def fixed(*shape, scale=0.3, shift=0.0):
        n = 1
        for s in shape:
            n *= s
        return (torch.arange(n, dtype=torch.float64).reshape(*shape).sin() * scale + shift)

    # ---- VAE ELBO with fixed noise ---------------------------------------------------------------------
    x = (fixed(4, 6) > 0).to(torch.float64)                 # binary "images", batch 4, 6 pixels
    enc = nn.Linear(6, 2 * 2)
    dec = nn.Linear(2, 6)
    with torch.no_grad():
        enc.weight.copy_(fixed(4, 6)); enc.bias.copy_(fixed(4, shift=0.1))
        dec.weight.copy_(fixed(6, 2, scale=0.5)); dec.bias.copy_(fixed(6, shift=-0.2))
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=0.05)
    eps = fixed(4, 2, scale=1.0)
    for step in range(3):
        h = enc(x)
        loc, log_scale = h[:, :2], h[:, 2:]
        q = Independent(Normal(loc, log_scale.exp()), 1)
        z = loc + log_scale.exp() * eps                     # rsample with given noise
        prior = Independent(Normal(torch.zeros(4, 2), torch.ones(4, 2)), 1)
        lik = Independent(Bernoulli(logits=dec(z)), 1)
        elbo = (lik.log_prob(x) - kl_divergence(q, prior)).mean()
        log_q = q.log_prob(z)
        opt.zero_grad()
        (-elbo).backward()
        opt.step()
        print("vae", step, f"{elbo.item():.12f}", f"{log_q.sum().item():.12f}", f"{q.entropy().sum().item():.12f}")

    # ---- REINFORCE with Categorical --------------------------------------------------------------------
    policy = nn.Linear(3, 4)
    with torch.no_grad():
        policy.weight.copy_(fixed(4, 3, scale=0.8)); policy.bias.copy_(fixed(4, shift=0.05))
    popt = torch.optim.SGD(policy.parameters(), lr=0.1)
    states = fixed(5, 3, scale=1.0)
    actions = torch.tensor([0, 3, 1, 1, 2])
    returns = torch.tensor([1.0, -0.5, 2.0, 0.0, 0.7])
    for step in range(3):
        dist = Categorical(logits=policy(states))
        loss = -(dist.log_prob(actions) * returns).mean() - 0.01 * dist.entropy().mean()
        popt.zero_grad()
        loss.backward()
        popt.step()
        print("pg", step, f"{loss.item():.12f}", f"{dist.probs[0, 0].item():.12f}")
''')


def test_program_runs_the_same_under_torch_and_ember(tmp_path):
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    outs = {}
    for which in ("torch", "ember"):
        r = subprocess.run([sys.executable, str(path), which], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ))
        assert r.returncode == 0, r.stdout + r.stderr
        outs[which] = r.stdout.split()
    assert len(outs["torch"]) == 3 * 5 + 3 * 4, outs["torch"]   # 3 vae lines of 5 fields, 3 pg lines of 4
    for a, b in zip(outs["torch"], outs["ember"]):
        if a.replace(".", "").lstrip("-").isdigit() and "." in a:
            assert abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a))), (outs["torch"], outs["ember"])
        else:
            assert a == b

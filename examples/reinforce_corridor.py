"""REINFORCE (Monte-Carlo policy gradient) on a small self-written corridor environment.

Runs unchanged under PyTorch and ember::

    python examples/reinforce_corridor.py            # import torch
    python examples/reinforce_corridor.py --ember    # import ember as torch

The corridor has ``length`` cells; the agent starts in cell 1, moves left or right, and the
episode ends with reward +1 in the last cell, 0 in cell 0, or after ``max_t`` moves; each move
costs 0.01. The policy is an MLP on the one-hot cell. Each step plays a batch of episodes,
then minimises ``-(log pi(a|s) * (G_t - baseline)).sum() / episodes``.

Actions are drawn with ``torch.multinomial(probs, 1)`` when ``sampler="framework"``. The two
frameworks' generators differ, so for an exact comparison ``sampler="numpy"`` (the default)
draws them by inverting the CDF at a seeded numpy uniform instead. Log-probabilities use
``log_softmax`` + ``gather``.

``main(torch, steps, seed, sampler, stats=None)`` returns the per-step policy-gradient losses;
when ``stats`` is a dict it also gets ``"mean_return"`` per step.
"""
import math
import sys

import numpy as np


class Corridor:
    """A 1-D corridor: cells 0..length-1, actions 0 = left, 1 = right."""

    def __init__(self, length=6, max_t=20, step_cost=0.01):
        self.length, self.max_t, self.step_cost = length, max_t, step_cost

    def reset(self):
        self.pos, self.t = 1, 0
        return self.pos

    def step(self, action):
        """-> (next cell, reward, done)."""
        self.pos += 1 if action == 1 else -1
        self.t += 1
        if self.pos == self.length - 1:
            return self.pos, 1.0, True
        if self.pos == 0:
            return self.pos, 0.0, True
        return self.pos, -self.step_cost, self.t >= self.max_t


def numpy_init(torch, model, rng):
    """Overwrite the parameters from a numpy generator (matrices U(-1/sqrt(fan_in), +), biases 0)."""
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() > 1:
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
            else:
                p.zero_()


def main(torch, steps=25, seed=0, sampler="numpy", stats=None, episodes=8, gamma=0.99, length=6):
    if sampler not in ("numpy", "framework"):
        raise ValueError(f"sampler must be 'numpy' or 'framework', got {sampler!r}")
    nn, F = torch.nn, torch.nn.functional
    rng = np.random.default_rng(seed)
    env = Corridor(length)
    policy = nn.Sequential(nn.Linear(length, 32), nn.Tanh(), nn.Linear(32, 2))
    numpy_init(torch, policy, rng)
    if sampler == "framework":
        torch.manual_seed(seed)
    opt = torch.optim.Adam(policy.parameters(), lr=2e-2)
    eye = torch.eye(length)
    losses, mean_return = [], []
    for _ in range(steps):
        states, actions, returns, totals = [], [], [], []
        for _ in range(episodes):
            s, done, rewards = env.reset(), False, []
            while not done:
                with torch.no_grad():
                    probs = F.softmax(policy(eye[s]), dim=-1)
                if sampler == "numpy":      # inverse CDF at a numpy uniform
                    a = int((probs.cumsum(0) < float(rng.uniform())).sum().item())
                    a = min(a, 1)
                else:
                    a = int(torch.multinomial(probs, 1).item())
                states.append(s)
                actions.append(a)
                s, r, done = env.step(a)
                rewards.append(r)
            g, discounted = 0.0, []
            for r in reversed(rewards):
                g = r + gamma * g
                discounted.append(g)
            returns.extend(reversed(discounted))
            totals.append(sum(rewards))
        ret = torch.tensor(returns, dtype=torch.float32)
        advantage = ret - ret.mean()
        logp = F.log_softmax(policy(eye[torch.tensor(states)]), dim=-1)
        logp_a = logp.gather(1, torch.tensor(actions).unsqueeze(1)).squeeze(1)
        loss = -(logp_a * advantage).sum() / episodes
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        mean_return.append(float(np.mean(totals)))
    if stats is not None:
        stats["mean_return"] = mean_return
    return losses


if __name__ == "__main__":
    if "--ember" in sys.argv[1:]:
        import ember as torch
    else:
        import torch
    stats = {}
    print(main(torch, stats=stats))
    print("mean return per step:", [round(r, 2) for r in stats["mean_return"]])

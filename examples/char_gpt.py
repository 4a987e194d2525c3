"""A tiny character-level GPT (decoder-only transformer) trained on a short embedded text.

Runs unchanged under PyTorch and ember::

    python examples/char_gpt.py            # import torch
    python examples/char_gpt.py --ember    # import ember as torch

``main(torch, steps, seed)`` returns the per-step training losses (cross-entropy, nats/char).
Initial weights and the batches come from a seeded numpy generator, so both frameworks start
from the same point and see the same data; dropout is off, so training is deterministic.
"""
import math
import sys

import numpy as np

TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. However little known the feelings or views of such a man may be "
    "on his first entering a neighbourhood, this truth is so well fixed in the minds of the "
    "surrounding families, that he is considered the rightful property of some one or other of "
    "their daughters."
)


def encode(text):
    """Characters -> int ids; returns (ids as an int64 numpy array, vocabulary string)."""
    vocab = "".join(sorted(set(text)))
    return np.array([vocab.index(c) for c in text], dtype=np.int64), vocab


def numpy_init(torch, model, rng):
    """Overwrite the parameters from a numpy generator: matrices U(-1/sqrt(fan_in), +), biases 0,
    LayerNorm weights kept at 1 -- the same start under any framework."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
            elif name.endswith("bias"):
                p.zero_()


def build_model(torch, vocab_size, block_size, n_embd=32, n_head=4, n_layer=2, attention="sdpa", dropout=0.0):
    """``attention="sdpa"`` uses F.scaled_dot_product_attention(is_causal=True); ``"manual"`` writes
    it out with a registered lower-triangular mask buffer, masked_fill and softmax."""
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(n_embd, 3 * n_embd)
            self.proj = nn.Linear(n_embd, n_embd)
            self.attn_drop = nn.Dropout(dropout)
            self.register_buffer("mask", torch.tril(torch.ones(block_size, block_size))
                                 .view(1, 1, block_size, block_size))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(n_embd, dim=2)
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
            if attention == "sdpa":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                   dropout_p=dropout if self.training else 0.0)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
                y = self.attn_drop(F.softmax(att, dim=-1)) @ v
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab_size, n_embd)
            self.pos = nn.Embedding(block_size, n_embd)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab_size, bias=False)
            self.head.weight = self.tok.weight          # weight tying, as in GPT-2

        def forward(self, idx, targets=None):
            T = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(T))
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.ln_f(x))
            if targets is None:
                return logits, None
            return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def generate(torch, model, idx, new_tokens, block_size, top_k=5):
    """Sample ``new_tokens`` ids after ``idx`` (int64, (B, T)) from the top-k logits with
    torch.multinomial (the framework's generator: not comparable across frameworks)."""
    model.eval()
    with torch.no_grad():
        for _ in range(new_tokens):
            logits, _ = model(idx[:, -block_size:])
            logits = logits[:, -1, :]
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float("inf")
            nxt = torch.multinomial(torch.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, nxt), dim=1)
    model.train()
    return idx


def main(torch, steps=30, seed=0, batch_size=8, block_size=16, attention="sdpa", sample=None):
    """Train for ``steps`` AdamW steps (cosine-annealed learning rate, clipped gradients) and return
    the per-step losses; with ``sample`` a dict, ``sample["text"]`` gets 40 generated characters."""
    rng = np.random.default_rng(seed)
    data, vocab = encode(TEXT)
    model = build_model(torch, len(vocab), block_size, attention=attention)
    numpy_init(torch, model, rng)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=3e-4)
    losses = []
    for _ in range(steps):
        starts = rng.integers(0, len(data) - block_size - 1, size=batch_size)
        x = torch.from_numpy(np.stack([data[s:s + block_size] for s in starts]))
        y = torch.from_numpy(np.stack([data[s + 1:s + 1 + block_size] for s in starts]))
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    if sample is not None:
        torch.manual_seed(seed)
        out = generate(torch, model, torch.from_numpy(data[None, :4]), 40, block_size)
        sample["text"] = "".join(vocab[i] for i in out[0].tolist())
    return losses


if __name__ == "__main__":
    if "--ember" in sys.argv[1:]:
        import ember as torch
    else:
        import torch
    sample = {}
    print(main(torch, sample=sample))
    print("sample:", repr(sample["text"]))

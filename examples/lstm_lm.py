"""A character-level LSTM language model, trained with truncated backpropagation through time.

Runs unchanged under PyTorch and ember::

    python examples/lstm_lm.py            # import torch
    python examples/lstm_lm.py --ember    # import ember as torch

The text is cut into ``batch_size`` parallel streams; each step trains on the next ``bptt``
characters of every stream, carrying the LSTM state over from the previous chunk but detaching it
(truncated BPTT), with gradient-norm clipping. Initial weights come from a seeded numpy generator,
so both frameworks train identically.

``main(torch, steps, seed)`` returns the per-step cross-entropy (nats/char).
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


def numpy_init(torch, model, rng):
    """Overwrite the parameters from a numpy generator (matrices U(-1/sqrt(fan_in), +), biases 0)."""
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() > 1:
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
            else:
                p.zero_()


def build_model(torch, vocab_size, emb=16, hidden=48, layers=2):
    nn = torch.nn

    class CharLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab_size, emb)
            self.lstm = nn.LSTM(emb, hidden, num_layers=layers, batch_first=True)
            self.out = nn.Linear(hidden, vocab_size)

        def forward(self, idx, state=None):
            h, state = self.lstm(self.embed(idx), state)
            return self.out(h), state

    return CharLSTM()


def main(torch, steps=30, seed=0, batch_size=4, bptt=16, clip=1.0):
    F = torch.nn.functional
    rng = np.random.default_rng(seed)
    vocab = "".join(sorted(set(TEXT)))
    ids = np.array([vocab.index(c) for c in TEXT], dtype=np.int64)
    stream_len = (len(ids) - 1) // batch_size
    inputs = torch.from_numpy(ids[:stream_len * batch_size].reshape(batch_size, stream_len).copy())
    targets = torch.from_numpy(ids[1:stream_len * batch_size + 1].reshape(batch_size, stream_len).copy())
    model = build_model(torch, len(vocab))
    numpy_init(torch, model, rng)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses, state, pos = [], None, 0
    for _ in range(steps):
        if pos + bptt > stream_len:       # a new pass over the text starts from a fresh state
            pos, state = 0, None
        x, y = inputs[:, pos:pos + bptt], targets[:, pos:pos + bptt]
        pos += bptt
        if state is not None:
            state = tuple(s.detach() for s in state)
        logits, state = model(x, state)
        loss = F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    if "--ember" in sys.argv[1:]:
        import ember as torch
    else:
        import torch
    print(main(torch))

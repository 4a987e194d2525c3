"""A two-layer graph convolutional network (Kipf & Welling) classifying the nodes of a
stochastic block model.

Runs unchanged under PyTorch and ember::

    python examples/gcn_sbm.py            # import torch
    python examples/gcn_sbm.py --ember    # import ember as torch
    python examples/gcn_sbm.py --ember --adjacency sparse   # or dense (default), edges

The graph has ``blocks`` communities of ``size`` nodes (edge probability ``p_in`` inside a
community, ``p_out`` across); each node's features are a weak, noisy hint of its community.
A layer computes ``A_hat @ X @ W`` with ``A_hat = D^-1/2 (A + I) D^-1/2``, in one of three
equivalent ways (``adjacency``): a dense matrix, a sparse COO matrix with ``torch.sparse.mm``, or
message passing over an edge list (degrees by ``torch.bincount``, sums by ``index_add_``, as
PyTorch Geometric does). Half the nodes of every
community are labelled for training, the rest are held out. The graph, the features and the
initial weights come from a seeded numpy generator, so both frameworks train identically.

``main(torch, steps, seed, stats=None)`` returns the per-step training cross-entropy; when
``stats`` is a dict it also gets ``"test_accuracy"`` (on the held-out nodes, after training).
"""
import math
import sys

import numpy as np


def make_graph(rng, blocks=3, size=20, p_in=0.3, p_out=0.02, features=8, signal=0.6):
    """-> (A + I as float64 (N, N), X float32 (N, features), labels int64 (N,), train mask bool (N,))."""
    labels = np.repeat(np.arange(blocks), size)
    n = labels.size
    same = labels[:, None] == labels[None, :]
    upper = np.triu(rng.uniform(size=(n, n)) < np.where(same, p_in, p_out), k=1)
    adj = (upper | upper.T).astype(np.float64) + np.eye(n)
    x = rng.standard_normal((n, features))
    x[np.arange(n), labels] += signal            # a weak hint in the first `blocks` features
    train = np.zeros(n, dtype=bool)
    for b in range(blocks):
        train[rng.choice(np.flatnonzero(labels == b), size // 2, replace=False)] = True
    return adj, x.astype(np.float32), labels.astype(np.int64), train


def normalized_adjacency(torch, adj, how):
    """A_hat for GraphConv from the 0/1 matrix ``adj`` (self loops included): a dense float32 tensor,
    a sparse COO one, or the edge list ``(src, dst, weight)`` with ``weight = d_src^-1/2 d_dst^-1/2``."""
    if how == "edges":
        dst, src = (torch.from_numpy(i) for i in np.nonzero(adj))
        deg = torch.bincount(dst, minlength=adj.shape[0]).float()
        return src, dst, deg[src].rsqrt() * deg[dst].rsqrt()
    d_inv_sqrt = 1.0 / np.sqrt(adj.sum(1))
    a_hat = torch.from_numpy((d_inv_sqrt[:, None] * adj * d_inv_sqrt[None, :]).astype(np.float32))
    return a_hat.to_sparse() if how == "sparse" else a_hat


def numpy_init(torch, model, rng):
    """Overwrite the parameters from a numpy generator (Glorot-uniform matrices, biases 0)."""
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() > 1:
                bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
                p.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
            else:
                p.zero_()


def build_model(torch, in_features, hidden, classes):
    nn, F = torch.nn, torch.nn.functional

    class GraphConv(nn.Module):
        def __init__(self, fan_in, fan_out):
            super().__init__()
            self.linear = nn.Linear(fan_in, fan_out)

        def forward(self, x, a_hat):
            h = self.linear(x)
            if isinstance(a_hat, tuple):                   # message passing over the edge list
                src, dst, weight = a_hat
                return torch.zeros_like(h).index_add_(0, dst, h[src] * weight.unsqueeze(1))
            return torch.sparse.mm(a_hat, h) if a_hat.is_sparse else a_hat @ h

    class GCN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = GraphConv(in_features, hidden)
            self.conv2 = GraphConv(hidden, classes)

        def forward(self, x, a_hat):
            return self.conv2(F.relu(self.conv1(x, a_hat)), a_hat)

    return GCN()


def main(torch, steps=50, seed=0, stats=None, hidden=16, adjacency="dense"):
    if adjacency not in ("dense", "sparse", "edges"):
        raise ValueError(f"adjacency must be 'dense', 'sparse' or 'edges', got {adjacency!r}")
    F = torch.nn.functional
    rng = np.random.default_rng(seed)
    adj, x_np, y_np, train_np = make_graph(rng)
    a_hat = normalized_adjacency(torch, adj, adjacency)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    train = torch.from_numpy(train_np)
    model = build_model(torch, x.shape[1], hidden, int(y_np.max()) + 1)
    numpy_init(torch, model, rng)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    losses = []
    for _ in range(steps):
        model.train()
        logits = model(x, a_hat)
        loss = F.cross_entropy(logits[train], y[train])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    if stats is not None:
        model.eval()
        with torch.inference_mode():
            pred = model(x, a_hat).argmax(dim=1)
        stats["test_accuracy"] = (pred[~train] == y[~train]).float().mean().item()
    return losses


if __name__ == "__main__":
    if "--ember" in sys.argv[1:]:
        import ember as torch
    else:
        import torch
    stats = {}
    how = sys.argv[sys.argv.index("--adjacency") + 1] if "--adjacency" in sys.argv else "dense"
    print(main(torch, stats=stats, adjacency=how))
    print("held-out accuracy:", stats["test_accuracy"])

"""Hogwild training: several processes update one shared model at once, without locks.

The model's parameters are moved to shared memory (``Module.share_memory()``); each worker
process runs its own optimizer over its own shard of scikit-learn's handwritten digits and
writes its updates straight into the shared parameters (Recht et al., "Hogwild!", 2011).
The parent then evaluates the shared model on a held-out split.

    python examples/hogwild.py --workers 4 --epochs 30

Works with the 'fork', 'spawn' and 'forkserver' start methods (--start-method): with 'spawn'
the model and the data travel to the workers through ember.multiprocessing's reducers, which
send file descriptors of the shared memory, not copies.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember
import ember.multiprocessing as mp
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim


def load_digits_split(seed=0, test_fraction=0.2):
    """(X_train, y_train, X_test, y_test): the 8x8 digits as 64 features in [0, 1], labels int64."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(X))
    X, y = (X[order] / 16.0).astype(np.float32), y[order].astype(np.int64)
    n_test = int(len(X) * test_fraction)
    return (ember.from_numpy(X[n_test:]), ember.from_numpy(y[n_test:]),
            ember.from_numpy(X[:n_test]), ember.from_numpy(y[:n_test]))


def make_model(hidden=64):
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def train(rank, model, X, y, workers, epochs=5, lr=0.05, batch_size=32, seed=0, lock=None, steps=None,
          contrib=None):
    """One Hogwild worker: SGD on shard ``rank`` of (X, y), updating the shared ``model`` in place.

    Optional instrumentation (used by the tests): ``steps[rank]`` counts this worker's updates;
    with ``lock`` each update is applied under the lock and its change of the flattened
    parameters is added to ``contrib[rank]``, so the parent can check that every worker's
    updates landed in the shared memory.
    """
    from ember.nn.utils import parameters_to_vector
    ember.manual_seed(seed + rank)
    params = list(model.parameters())
    opt = optim.SGD(params, lr=lr, momentum=0.5)
    Xs, ys = X[rank::workers], y[rank::workers]
    n = Xs.shape[0]
    for _ in range(epochs):
        perm = ember.randperm(n)
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            opt.zero_grad()
            loss = F.cross_entropy(model(Xs[idx]), ys[idx])
            loss.backward()
            if lock is None:
                opt.step()                       # Hogwild: no lock, writes land in the shared parameters
            else:
                with lock, ember.no_grad():
                    before = parameters_to_vector(params)
                    opt.step()
                    if contrib is not None:
                        contrib[rank] += parameters_to_vector(params) - before
            if steps is not None:
                steps[rank] += 1


@ember.no_grad()
def evaluate(model, X, y):
    """(mean cross-entropy, accuracy) of ``model`` on (X, y)."""
    out = model(X)
    return F.cross_entropy(out, y).item(), (out.argmax(1) == y).float().mean().item()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=30, help="epochs over each worker's shard")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-method", default=None, choices=["fork", "spawn", "forkserver"])
    args = p.parse_args(argv)

    ember.manual_seed(args.seed)
    X, y, X_test, y_test = load_digits_split(args.seed)
    model = make_model()
    model.share_memory()                  # parameters in shared memory: every worker writes to them
    loss0, acc0 = evaluate(model, X_test, y_test)
    print(f"{args.workers} workers, {X.shape[0]} training / {X_test.shape[0]} test digits; "
          f"before training: loss {loss0:.3f}, accuracy {acc0:.1%}")

    ctx = mp.get_context(args.start_method)
    start = time.perf_counter()
    procs = [ctx.Process(target=train, args=(rank, model, X, y, args.workers, args.epochs, args.lr,
                                             args.batch_size, args.seed)) for rank in range(args.workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    failed = [i for i, proc in enumerate(procs) if proc.exitcode != 0]
    if failed:
        raise SystemExit(f"worker(s) {failed} failed")
    loss, acc = evaluate(model, X_test, y_test)
    print(f"after {time.perf_counter() - start:.1f} s of Hogwild training: test loss {loss:.3f}, "
          f"test accuracy {acc:.2%}")
    return acc


if __name__ == "__main__":
    main()

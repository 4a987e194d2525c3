"""Samplers: iterables of dataset indices (or of lists of indices, for BatchSampler)
(match torch.utils.data.Sampler, SequentialSampler, RandomSampler,
SubsetRandomSampler, WeightedRandomSampler, BatchSampler).

Random samplers draw with ember's random ops (``ember.randperm``, ``ember.randint``,
``ember.multinomial``) from the ``generator`` they are given; without one, each pass
seeds a fresh cpu generator from the global one, so ``ember.manual_seed`` makes the
order reproducible.
"""
from __future__ import annotations

import ember

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler:
    """Base class of samplers: subclasses define ``__iter__`` yielding indices, and may
    define ``__len__`` (matches torch.utils.data.Sampler)."""

    def __iter__(self):
        raise NotImplementedError

    def __class_getitem__(cls, item):       # Sampler[int] in annotations
        return cls


def _pass_generator(generator):
    """The generator one pass of a random sampler draws from: ``generator``, or a fresh
    cpu generator seeded from the global one (so ``ember.manual_seed`` fixes the order)."""
    if generator is not None:
        return generator
    seed = int(ember.empty((), dtype=ember.int64).random_().item())
    return ember.Generator().manual_seed(seed)


def _check_num_samples(num_samples):
    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
        raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")


class SequentialSampler(Sampler):
    """Indices ``0 .. len(data_source) - 1`` in order (matches
    torch.utils.data.SequentialSampler)."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices into ``data_source`` (matches torch.utils.data.RandomSampler).

    Without replacement each pass is a permutation (repeated, then cut, when
    ``num_samples`` exceeds the length); with ``replacement=True`` indices are drawn
    uniformly and independently. ``num_samples`` defaults to ``len(data_source)``.

    :raises TypeError: ``replacement`` is not a bool.
    :raises ValueError: ``num_samples`` is not a positive int.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields: ``num_samples`` if given, else the dataset's current length."""
        # the dataset's length is read on each use: it may change between passes
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        gen = _pass_generator(self.generator)
        total = self.num_samples
        if self.replacement:
            chunk = 32                        # draw in small chunks: a partly consumed pass draws little
            for start in range(0, total, chunk):
                size = min(chunk, total - start)
                yield from ember.randint(0, n, (size,), dtype=ember.int64, generator=gen).tolist()
            return
        for _ in range(total // n):
            yield from ember.randperm(n, generator=gen).tolist()
        if total % n:
            yield from ember.randperm(n, generator=gen)[:total % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order, without replacement (matches
    torch.utils.data.SubsetRandomSampler)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in ember.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices into ``weights``, index i drawn with probability
    proportional to ``weights[i]`` (matches torch.utils.data.WeightedRandomSampler).

    The weights need not sum to one; they are kept as a float64 tensor (``weights``).
    Without replacement, ``num_samples`` may not exceed the number of nonzero weights.

    :raises ValueError: ``num_samples`` not a positive int, ``replacement`` not a bool,
        or weights that are not one-dimensional.
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_num_samples(num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = ember.as_tensor(weights, dtype=ember.float64)
        if w.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        drawn = ember.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (matches
    torch.utils.data.BatchSampler); the last list is shorter unless ``drop_last``.

    ``len()`` is ``len(sampler) // batch_size`` with ``drop_last``, else rounded up.

    :raises ValueError: ``batch_size`` not a positive int, or ``drop_last`` not a bool.
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)

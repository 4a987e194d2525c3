"""ember.func.rearrange against torch.func.rearrange (einops patterns)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [
    ((2, 3, 4), "a b c -> c a b", {}),
    ((2, 3, 12), "b c (h w) -> b (c h) w", {"h": 3}),
    ((6, 4), "(a b) c -> a b c", {"a": 2}),
    ((2, 3, 4, 5), "b ... w -> w ... b", {}),
    ((2, 3, 4, 5), "b ... -> b (...)", {}),
    ((2, 3), "a b -> a 1 b ()", {}),
    ((2, 1, 3), "a 1 b -> b a", {}),
    ((4, 6), "h (w c) -> (c h) w", {"c": 2}),
    ((2, 3, 4), "... -> ...", {}),
]


@pytest.mark.parametrize("shape,pattern,lengths", CASES)
def test_rearrange_matches_torch(shape, pattern, lengths):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    want = torch.func.rearrange(torch.tensor(x), pattern, **lengths)
    got = ember.func.rearrange(ember.tensor(x), pattern, **lengths)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_list_input_is_stacked():
    xs = [np.full((2, 3), i, dtype=np.float32) for i in range(4)]
    want = torch.func.rearrange([torch.tensor(x) for x in xs], "n h w -> h (n w)")
    got = ember.func.rearrange([ember.tensor(x) for x in xs], "n h w -> h (n w)")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("pattern,lengths", [("a b -> a", {}), ("a b c -> a b c", {}), ("(a b) c -> a b c", {}),
                                             ("a b -> (a b", {}), ("a a -> a", {}), ("a b c", {}),
                                             ("(a b) c -> a b c", {"a": 4})])
def test_bad_patterns_raise_like_torch(pattern, lengths):
    """PyTorch raises ValueError for malformed patterns and functorch's DimensionBindError (an Exception of its
    own) for sizes that do not bind; ember raises ValueError for both."""
    x = np.zeros((6, 4), dtype=np.float32)
    with pytest.raises(Exception) as te:
        torch.func.rearrange(torch.tensor(x), pattern, **lengths)
    with pytest.raises(ValueError):
        ember.func.rearrange(ember.tensor(x), pattern, **lengths)
    assert isinstance(te.value, ValueError) or type(te.value).__name__ == "DimensionBindError"

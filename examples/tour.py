"""A short tour of ember on the default device: tensors, views, dtypes, ops, plugins.

Run with ``python examples/tour.py`` (the README's first command runs it). The
nn/optim issue replaces this with the main job, training on real data.
"""
import ember as torch  # PyTorch code runs with this import where ember has the feature

print("ember", torch.__version__, "- installed plugins:",
      ", ".join(f"{p.name} ({p.status})" for p in torch.plugins.list()))
print("cuda available:", torch.cuda.is_available())

torch.manual_seed(0)
x = torch.arange(12, dtype=torch.float32).view(3, 4)
print("x =", x)
print("x.t() is a view:", x.t().untyped_storage() is x.untyped_storage(), "stride", x.t().stride())
print("x[1:, ::2] =", x[1:, ::2])
print("x.sum(dim=0) =", x.sum(dim=0))
print("x.max(dim=1) =", x.max(dim=1))
w = torch.randn(4, 2)
print("x @ w shape:", (x @ w).shape)
print("int + float promotes:", (torch.tensor([1, 2]) + 0.5).dtype)
print("softmax-like row normalisation:", (x.exp() / x.exp().sum(dim=1, keepdim=True)).sum(dim=1))
try:
    torch.ones(2, 3) + torch.ones(4)
except RuntimeError as e:
    print("broadcast error, as in PyTorch:", e)
print("memory allocated on cpu:", torch.memory.memory_allocated("cpu"), "bytes")

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

# autograd: reverse mode, recorded by the dispatcher, formulas written with ember ops (any device)
w = torch.randn(3, requires_grad=True)
y = (w * w).sum()
y.backward()
print("d/dw sum(w*w) == 2w:", torch.allclose(w.grad, 2 * w.detach()), "| grad_fn:", y.grad_fn.name())
(g,) = torch.autograd.grad((w ** 3).sum(), w, create_graph=True)   # double backward
(h,) = torch.autograd.grad(g.sum(), w)
print("second derivative of w**3 == 6w:", torch.allclose(h, 6 * w.detach()))
# fit y = 3x + 1 by gradient descent
xs = torch.linspace(-1, 1, 50)
ys = 3 * xs + 1
a = torch.zeros(1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for step in range(200):
    loss = ((a * xs + b - ys) ** 2).mean()
    a.grad = b.grad = None
    loss.backward()
    with torch.no_grad():
        a -= 0.5 * a.grad
        b -= 0.5 * b.grad
print(f"fitted a = {a.item():.3f}, b = {b.item():.3f} (true 3, 1), loss {loss.item():.2e}")

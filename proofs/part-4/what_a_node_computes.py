"""A node turns the gradient of its output into the gradients of its inputs, a vector-Jacobian product, and never builds the Jacobian.

Forward: y = (x * w).sin(), loss = y.sum(), with x and w four float64 values each. The script
calls every node of the recorded graph by hand, from the loss down (a node is callable:
node(grad) returns the gradients of its operation's inputs), under torch.no_grad() so that
these calls record nothing, and compares each result with v @ J: the incoming gradient v times
the operation's Jacobian J, built in full without autograd, by central differences of the
forward (perturb one input element by 1e-6 either way, divide the change of every output by
2e-6). Then
loss.backward() runs the same chain and the script compares x.grad and w.grad with the
hand-run one. Last, it works out how large a Jacobian would be on Figure 1's hidden layer (1,024
rows of 64 float32 values), whose ReLU node only ever multiplies by a mask.
"""
import matplotlib.pyplot as plt
import torch

torch.manual_seed(0)
x = torch.randn(4, dtype=torch.float64, requires_grad=True)
w = torch.randn(4, dtype=torch.float64, requires_grad=True)
u = x * w          # MulBackward0: saves x and w
y = u.sin()        # SinBackward0: saves u
loss = y.sum()     # SumBackward0: saves only y's size

sum_node = loss.grad_fn
sin_node = sum_node.next_functions[0][0]
mul_node = sin_node.next_functions[0][0]
with torch.no_grad():                    # calling a node by hand must not record anything
    g_y = sum_node(torch.tensor(1.0, dtype=torch.float64))   # d loss / d y
    g_u = sin_node(g_y)                                       # d loss / d u = g_y * cos(u)
    g_x, g_w = mul_node(g_u)                                  # d loss / d x = g_u * w, and for w



def jacobian_by_differences(f, t, h=1e-6):
    """J[i, j] = d f(t)[i] / d t[j], by central differences: no autograd involved."""
    columns = []
    for j in range(t.numel()):
        plus, minus = t.clone(), t.clone()
        plus[j] += h
        minus[j] -= h
        columns.append(((f(plus) - f(minus)) / (2 * h)).reshape(-1))
    return torch.stack(columns, dim=1)


# The same products with the Jacobians built in full, from the forward alone.
with torch.no_grad():
    x0, w0, u0, y0 = x.detach(), w.detach(), u.detach(), y.detach()
    J_sum = jacobian_by_differences(lambda t: t.sum(), y0)        # 1 x 4: a row of ones
    J_sin = jacobian_by_differences(torch.sin, u0)                # 4 x 4: cos(u) on the diagonal
    J_mul_x = jacobian_by_differences(lambda t: t * w0, x0)       # 4 x 4: w on the diagonal
    J_mul_w = jacobian_by_differences(lambda t: x0 * t, w0)       # 4 x 4: x on the diagonal
    one = torch.ones(1, dtype=torch.float64)


def close(a, b):
    return torch.allclose(a, b, rtol=1e-7, atol=1e-9)


vjp_matches = bool(close(g_y, (one @ J_sum).reshape(-1)) and close(g_u, g_y @ J_sin)
                   and close(g_x, g_u @ J_mul_x) and close(g_w, g_u @ J_mul_w))
sin_jacobian_is_diagonal = bool(torch.equal(J_sin, torch.diag(torch.diagonal(J_sin))))
nodes_called_record_nothing = g_u.grad_fn is None and g_x.grad_fn is None

sin_saved_u = sin_node._saved_self.equal(u0)  # private _saved_* attribute (raises if gone)
mul_saved = sorted(a.removeprefix("_saved_") for a in dir(mul_node)
                   if a.startswith("_saved_") and isinstance(getattr(mul_node, a), torch.Tensor))
loss.backward()   # frees what the nodes saved
backward_matches_hand_chain = bool(torch.equal(x.grad, g_x) and torch.equal(w.grad, g_w))

# Figure 1's hidden layer: 1,024 rows x 64 values, float32. ReLU's Jacobian would be square.
ROWS, HIDDEN, FLOAT32 = 1024, 64, 4
hidden_values = ROWS * HIDDEN
hidden_kib = hidden_values * FLOAT32 / 1024
relu_jacobian_gib = hidden_values**2 * FLOAT32 / 2**30

print("forward: u = x * w; y = u.sin(); loss = y.sum()   (x, w: 4 float64 values)")
print(f"nodes, root first: {sum_node.name()} → {sin_node.name()} → {mul_node.name()}")
print(f"SumBackward0(1.0)  = {g_y.numpy().round(4)}")
print(f"SinBackward0(that) = {g_u.numpy().round(4)}   (= that * cos(u))")
print(f"MulBackward0(that) = {g_x.numpy().round(4)} for x, {g_w.numpy().round(4)} for w")
print(f"each equals v @ J, J built by central differences of the forward: {vjp_matches};"
      f" sin's Jacobian is diagonal: {sin_jacobian_is_diagonal}")
print(f"loss.backward() gives exactly these x.grad and w.grad: {backward_matches_hand_chain}")
print(f"SinBackward0 saved u: {sin_saved_u}; MulBackward0 saved {', '.join(mul_saved)}")
print(f"Figure 1's hidden layer: {hidden_values:,} values ({hidden_kib:.0f} KiB);"
      f" ReLU's Jacobian would hold {hidden_values**2:,} entries, {relu_jacobian_gib:.0f} GiB")

# Figure: the forward graph above, the backward graph it recorded below, gradients flowing left.
fig, ax = plt.subplots(figsize=(8, 3.9), layout="constrained")
ax.set_xlim(-0.3, 10.3)
ax.set_ylim(-0.2, 4.6)
ax.axis("off")
box = dict(boxstyle="round,pad=0.35", fc=(0.12, 0.47, 0.71, 0.12), ec="C0")
node_box = dict(boxstyle="round,pad=0.35", fc=(0.84, 0.15, 0.16, 0.10), ec="C3")
leaf_box = dict(boxstyle="round,pad=0.35", fc=(1.0, 0.5, 0.05, 0.14), ec="C1")
top = {"x": (0.4, 4.0), "w": (0.4, 2.9), "mul\nu = x * w": (3.0, 3.45),
       "sin\ny = sin(u)": (5.5, 3.45), "sum\nloss = sum(y)": (8.0, 3.45)}
ax.text(-0.2, 4.45, "forward: what your code ran", fontsize=9, fontweight="bold")
for name, (px, py) in top.items():
    ax.text(px, py, name, ha="center", va="center", fontsize=10,
            bbox=leaf_box if name in ("x", "w") else box)
mul, sin, total = "mul\nu = x * w", "sin\ny = sin(u)", "sum\nloss = sum(y)"
for a, b in (("x", mul), ("w", mul), (mul, sin), (sin, total)):
    ax.annotate("", xy=(top[b][0] - 0.75, top[b][1]), xytext=(top[a][0] + 0.6, top[a][1]),
                arrowprops=dict(arrowstyle="-|>", color="C0"))

bottom = {"AccumulateGrad\n(x.grad)": (0.6, 0.95), "AccumulateGrad\n(w.grad)": (0.6, -0.0),
          "MulBackward0\nsaved x, w": (3.0, 1.55), "SinBackward0\nsaved u": (5.5, 1.55),
          "SumBackward0\nsaved y's size": (8.0, 1.55)}
ax.text(-0.2, 2.35, "backward: the nodes it recorded, run right to left", fontsize=9,
        fontweight="bold")
for name, (px, py) in bottom.items():
    ax.text(px, py, name, ha="center", va="center", fontsize=9,
            bbox=leaf_box if name.startswith("Acc") else node_box)
flows = [((10.2, 1.55), (8.95, 1.55), "1.0", (9.6, 1.75)),
         ((7.05, 1.55), (6.4, 1.55), "v = ones", (6.75, 1.75)),
         ((4.6, 1.55), (3.9, 1.55), "g = v·cos(u)", (4.25, 1.75)),
         ((2.1, 1.45), (1.5, 1.0), "g·w", (1.55, 1.45)),
         ((2.1, 1.35), (1.5, 0.05), "g·x", (2.05, 0.55))]
for start, end, text, (tx, ty) in flows:
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="-|>", color="C3"))
    ax.text(tx, ty, text, ha="center", fontsize=9, color="C3")
for px in (3.0, 5.5, 8.0):
    ax.plot([px, px], [3.05, 1.95], linestyle=":", color="C7", linewidth=1)
ax.text(8.1, 2.55, "recorded", fontsize=7, color="C7")
ax.set_title("One small forward and the backward graph it leaves: each node is a"
             " vector-Jacobian product", fontsize=10)
plt.show()

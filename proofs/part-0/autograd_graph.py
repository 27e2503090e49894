"""The forward pass records a graph of C++ backward nodes, and backward replays it as ATen ops.

Builds y = (x*w).sin().sum(), walks y.grad_fn.next_functions, lists what each node saved
(the _saved_* attributes are private but long-lived), then runs y.backward() under a
TorchDispatchMode (from the underscore module torch.utils._python_dispatch) with a pre-hook
on every node, so each ATen op backward ran is filed under the node that ran it.
"""
import torch
import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

torch.manual_seed(0)


class DispatchLog(TorchDispatchMode):
    """Logs every ATen op; node pre-hooks append '>' markers into the same log."""

    def __init__(self):
        super().__init__()
        self.log = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append(func.__name__.split(".")[0])  # 'mul.Tensor' -> 'mul'
        return func(*args, **(kwargs or {}))


def walk(root):
    """Every node reachable from root, breadth-first, with its depth (steps from root)."""
    depth = {root: 0}
    order = [root]
    for node in order:  # order grows while we iterate
        for child, _ in node.next_functions:
            if child is not None and child not in depth:
                depth[child] = depth[node] + 1
                order.append(child)
    return order, depth


def saved_attrs(node):
    return [a for a in dir(node) if a.startswith("_saved_")]


def describe(names_by_depth):
    """['Sum'], ['Mul'], ['Acc', 'Acc'] -> 'Sum -> Mul -> Acc x2'."""
    steps = []
    for group in names_by_depth:
        if len(set(group)) == 1 and len(group) > 1:
            steps.append(f"{group[0]} x{len(group)}")
        else:
            steps.append(" + ".join(group))
    return " -> ".join(steps)


def run_backward(y, nodes):
    """Run y.backward(); return (ops run before any node, [ops each node ran])."""
    mode = DispatchLog()
    for i, node in enumerate(nodes):
        node.register_prehook(lambda grads, i=i: mode.log.append(f">{i}"))
    with mode:
        y.backward()
    before, per_node = [], [[] for _ in nodes]
    current = before
    for entry in mode.log:
        if entry.startswith(">"):
            current = per_node[int(entry[1:])]
        else:
            current.append(entry)
    return before, per_node


x = torch.randn(5, requires_grad=True)
w = torch.randn(5, requires_grad=True)
y = (x * w).sin().sum()

nodes, depth = walk(y.grad_fn)
names = {node: type(node).__name__ for node in nodes}
max_depth = max(depth.values())
layers = [[n for n in nodes if depth[n] == d] for d in range(max_depth + 1)]
graph_nodes = describe([[names[n] for n in layer] for layer in layers])
n_nodes = len(nodes)
grad_fn_type = type(y.grad_fn).__name__
grad_fn_module = type(y.grad_fn).__module__  # 'builtins': a class defined in C++
leaf_of = {node: node.variable for node in nodes if hasattr(node, "variable")}
accumulate_grad_is_x = any(v is x for v in leaf_of.values())
mul_node = next(n for n in nodes if names[n] == "MulBackward0")
mul_saved_are_inputs = mul_node._saved_self is x and mul_node._saved_other is w

before_ops, ops_per_node = run_backward(y, nodes)
node_ops = dict(zip(nodes, ops_per_node))
all_backward_ops = before_ops + [op for ops in ops_per_node for op in ops]
backward_ops = ", ".join(all_backward_ops)
n_backward_ops = len(all_backward_ops)
grad_matches = (torch.equal(x.grad, torch.cos(x * w) * w)
                and torch.equal(w.grad, torch.cos(x * w) * x))

print(f"type(y.grad_fn) = {grad_fn_type}, module {grad_fn_module!r} (a C++ class)")
print(f"graph: {graph_nodes}")
for node in nodes:
    var = leaf_of.get(node)
    leaf = "; .variable is x" if var is x else "; .variable is w" if var is w else ""
    saved = ", ".join(saved_attrs(node)) or "nothing"
    print(f"{'  ' * depth[node]}{names[node]:16s} saves {saved}{leaf}")
print(f"MulBackward0 saved x and w themselves (same objects): {mul_saved_are_inputs}")
print(f"backward ran {n_backward_ops} ATen ops: {', '.join(before_ops)} to seed the gradient,"
      " then")
for node in nodes:
    print(f"  {names[node]:16s} {', '.join(node_ops[node])}")
print(f"x.grad == cos(x*w)*w and w.grad == cos(x*w)*x bit for bit: {grad_matches}")

# Figure: leaves on the left, loss on the right; arrows follow next_functions (gradient flow).
pos = {}
for d, layer in enumerate(layers):
    for k, node in enumerate(layer):
        pos[node] = (max_depth - d + 1, (len(layer) - 1) / 2 - k)
for node, var in leaf_of.items():
    pos[var] = (0.3, pos[node][1])
pos[y] = (max_depth + 2, 0)

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
box = dict(boxstyle="round,pad=0.4", fc=to_rgba("C0", 0.15), ec="C0")
leaf_box = dict(boxstyle="round,pad=0.4", fc=to_rgba("C1", 0.15), ec="C1")
label = {}  # graph object -> its Text, so arrows can stop at the box edges
for node in nodes:
    ran = ", ".join(op if node_ops[node].count(op) == 1 else f"{op} x{node_ops[node].count(op)}"
                    for op in dict.fromkeys(node_ops[node]))  # unique, in order
    saved = ", ".join(a.removeprefix("_saved_") for a in saved_attrs(node)) or "nothing"
    label[node] = ax.text(*pos[node], f"{names[node]}\nbackward: {ran}\nsaved: {saved}",
                          ha="center", va="center", fontsize=8, bbox=box)
for name, t in (("x", x), ("w", w), ("y (loss)", y)):
    label[t] = ax.text(*pos[t], name, ha="center", va="center", fontsize=10, bbox=leaf_box)


def arrow(src, dst, style="-|>", dashed=False):
    ax.annotate("", xy=pos[dst], xytext=pos[src],
                arrowprops=dict(arrowstyle=style, color="C0", shrinkA=3, shrinkB=3,
                                patchA=label[src].get_bbox_patch(),
                                patchB=label[dst].get_bbox_patch(),
                                linestyle="--" if dashed else "-"))


arrow(y, y.grad_fn)
for node in nodes:
    for child, _ in node.next_functions:
        if child is not None:
            arrow(node, child)
for node, var in leaf_of.items():
    arrow(node, var, dashed=True)
ax.text(0.5, 0.03, "arrows: y.grad_fn, then next_functions (the way gradients flow);"
        " dashed: AccumulateGrad.variable", ha="center", fontsize=8, transform=ax.transAxes)
ax.set_xlim(0, max_depth + 2.35)
ax.set_ylim(-0.9, 0.7)
ax.axis("off")
ax.set_title("The graph autograd recorded for (x*w).sin().sum()")
plt.show()

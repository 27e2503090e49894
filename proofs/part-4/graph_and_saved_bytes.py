"""The graph Figure 1's forward pass records, node by node, and the bytes each node keeps for backward.

Builds Figure 1's network (Linear 8->64, ReLU, Linear 64->1, MSELoss) on its 1,024 rows, on the
CPU, runs one forward, prints loss.grad_fn.next_functions, and walks the graph from the loss. It
reads what each node saved from its _saved_* attributes (private but long-lived; the script
raises if no node exposes any), in forward order by the private Node._sequence_nr(). Each saved
tensor is sorted by its storage: data or a parameter (alive anyway), a new activation (memory
that only the graph keeps alive), or shared (a second reference to a storage already counted).
Before looking, it predicts the new bytes from the backward formulas of the four operations
(ReLU keeps its output, which the second layer's addmm also keeps; the first layer's addmm keeps
only the data; MSELoss keeps the prediction and the target) and the tensors' shapes. A second,
separate forward runs under a torch.autograd.graph.saved_tensors_hooks pack hook, which sees
each tensor as it is saved; it gives the same total under the same counting rule. The same network with GELU in place of ReLU is
predicted and measured too. retain_grad() on the first layer's output shows how a tensor that is
not a leaf gets a .grad.
"""
import warnings

import matplotlib.pyplot as plt
import torch
from matplotlib.colors import to_rgba
from torch import nn

ROWS, FEATURES, HIDDEN, FLOAT32 = 1024, 8, 64, 4
KIB = 1024


def figure1(activation):
    """Figure 1's data and network (part-0/training_program.py), on the CPU."""
    torch.manual_seed(0)
    x = torch.randn(ROWS, FEATURES)
    y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), activation, nn.Linear(HIDDEN, 1))
    return x, y, model


def saved_tensors(loss, alive_anyway):
    """{node: [(field, bytes, kind)]} for every node, and the nodes breadth-first from the loss."""
    nodes = [loss.grad_fn]
    for node in nodes:
        nodes.extend(c for c, _ in node.next_functions if c is not None and c not in nodes)
    counted, saved = set(), {}
    for node in sorted(nodes, key=lambda n: n._sequence_nr()):  # a storage counts at its first saver
        fields = []
        for attr in sorted(a for a in dir(node) if a.startswith("_saved_")):
            t = getattr(node, attr)
            if attr in ("_saved_mat2",) and t is None:
                fields.append(("mat2", 0, "not saved"))
            if not isinstance(t, torch.Tensor):
                continue
            ptr = t.untyped_storage().data_ptr()
            kind = alive_anyway.get(ptr) or ("shared" if ptr in counted else "new")
            counted.add(ptr)
            fields.append((attr.removeprefix("_saved_"), t.numel() * t.element_size(), kind))
        saved[node] = fields
    if not any(saved.values()):
        raise AttributeError("no node exposes _saved_* tensors any more")
    return nodes, saved


def alive_anyway(x, y, model):
    """{storage address: what it is} for the data, the target and the parameters."""
    alive = {x.untyped_storage().data_ptr(): "data x", y.untyped_storage().data_ptr(): "target y"}
    for name, p in model.named_parameters():
        alive[p.untyped_storage().data_ptr()] = "parameter " + name
    return alive


def run(activation):
    """One plain forward (no hooks): the graph and what each node kept."""
    x, y, model = figure1(activation)
    outputs = []  # the first layer's output, then the activation's
    model[0].register_forward_hook(lambda m, i, out: outputs.append(out))
    model[1].register_forward_hook(lambda m, i, out: outputs.append(out))
    loss = nn.MSELoss()(model(x), y)
    nodes, saved = saved_tensors(loss, alive_anyway(x, y, model))
    return x, model, loss, nodes, saved, outputs


def bytes_seen_by_pack_hook(activation):
    """A second, separate forward, counted only by a pack hook: new storages it was handed."""
    x, y, model = figure1(activation)
    alive, packed = alive_anyway(x, y, model), {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in alive:
            packed[ptr] = t.untyped_storage().nbytes()
        return t.detach()  # hold no reference to a tensor that has a grad_fn

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        nn.MSELoss()(model(x), y)
    return sum(packed.values())


x, model, loss, nodes, saved, (h, relu_out) = run(nn.ReLU())
hook_bytes = bytes_seen_by_pack_hook(nn.ReLU())
root_and_edges = ", ".join(
    f"({c.name() if c is not None else None}, {k})" for c, k in loss.grad_fn.next_functions)
n_nodes = len(nodes)
new_bytes = sum(b for fields in saved.values() for _, b, kind in fields if kind == "new")
referenced_bytes = sum(b for fields in saved.values() for _, b, _ in fields)
hook_agrees = hook_bytes == new_bytes
# The prediction: ReLU's output (ROWS x HIDDEN) and the prediction fed to MSELoss (ROWS x 1).
predicted_relu_kib = ROWS * HIDDEN * FLOAT32 / KIB
predicted_prediction_kib = ROWS * 1 * FLOAT32 / KIB
predicted_new_bytes = ROWS * HIDDEN * FLOAT32 + ROWS * 1 * FLOAT32
prediction_holds = new_bytes == predicted_new_bytes
saved_ptrs = {getattr(n, a).untyped_storage().data_ptr() for n in nodes for a in dir(n)
              if a.startswith("_saved_") and isinstance(getattr(n, a), torch.Tensor)}
pre_activation_not_saved = h.untyped_storage().data_ptr() not in saved_ptrs
new_kib = new_bytes / KIB
bytes_per_row = new_bytes / ROWS
param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
activations_over_params = new_bytes / param_bytes
relu_node = next(n for n in nodes if n.name() == "ReluBackward0")
relu_saved_kib = sum(b for _, b, _ in saved[relu_node]) / KIB

*_, gelu_saved, _ = run(nn.GELU())
gelu_new_bytes = sum(b for fields in gelu_saved.values() for _, b, kind in fields if kind == "new")
gelu_predicted_bytes = 2 * ROWS * HIDDEN * FLOAT32 + ROWS * FLOAT32  # GELU's input and output
gelu_prediction_holds = gelu_new_bytes == gelu_predicted_bytes
gelu_new_kib = gelu_new_bytes / KIB

h.retain_grad()
loss.backward()
retained_grad_shape = str(tuple(h.grad.shape))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # reading .grad of a non-leaf warns; the answer is None
    relu_output_grad_is_none = relu_out.grad is None

leaf_names = {id(p): name for name, p in model.named_parameters()}


def label(node):
    if node.name().endswith("AccumulateGrad"):
        return "AccumulateGrad\n" + leaf_names[id(node.variable)]
    return node.name()


def size(n):
    return f"{n / KIB:g} KiB" if n >= KIB else f"{n} B"


print("Figure 1: Linear(8, 64), ReLU, Linear(64, 1), MSELoss; 1,024 rows; CPU")
print(f"loss.grad_fn is {loss.grad_fn.name()}; its next_functions: {root_and_edges}")
print(f"{n_nodes} nodes; what each saved (new / shared / alive anyway):")
for node in nodes:
    fields = ", ".join(f"{f} {size(b)} {kind}" if b else f"{f} {kind}"
                       for f, b, kind in saved[node]) or "-"
    print(f"  {label(node).replace(chr(10), ' '):26s} {fields}")
print(f"predicted new bytes {predicted_new_bytes:,}, measured {new_bytes:,}"
      f" ({bytes_per_row:.0f} B per row; the graph refers to {referenced_bytes:,} B in all);"
      f" a pack hook counted {hook_bytes:,}")
print(f"the first layer's output (before ReLU) is not kept: {pre_activation_not_saved}")
print(f"parameters {param_bytes:,} B: the saved activations are {activations_over_params:.0f}"
      " times the parameters")
print(f"with GELU instead: predicted {gelu_predicted_bytes:,}, measured {gelu_new_bytes:,} B")
print(f"after backward: h.grad {retained_grad_shape} (retain_grad); ReLU's output has no .grad:"
      f" {relu_output_grad_is_none}")

# Figure: the forward above, the nodes it recorded below, each under its operation.
fig, ax = plt.subplots(figsize=(8.6, 4.3), layout="constrained")
by_label = {}
for node in nodes:
    by_label.setdefault(label(node), []).append(node)
addmm_1, addmm_2 = sorted(by_label["AddmmBackward0"], key=lambda n: n._sequence_nr())
t_1, t_2 = sorted(by_label["TBackward0"], key=lambda n: n._sequence_nr())
COLUMNS = {"linear1": 1.9, "relu": 4.3, "linear2": 6.7, "mse": 9.1}
FORWARD_Y, NODE_Y, T_Y, LEAF_Y = 4.2, 2.55, 1.3, 0.3
forward_boxes = [("x: data\n1,024 x 8", 0.0), ("Linear(8, 64)\naddmm", COLUMNS["linear1"]),
                 ("ReLU", COLUMNS["relu"]), ("Linear(64, 1)\naddmm", COLUMNS["linear2"]),
                 ("MSELoss(pred, y)\nloss", COLUMNS["mse"])]
for k, (text, px) in enumerate(forward_boxes):
    ax.text(px, FORWARD_Y, text, ha="center", va="center", fontsize=8.5,
            bbox=dict(boxstyle="round,pad=0.35", fc=to_rgba("C0", 0.10), ec="C0"))
    if k:
        ax.annotate("", xy=(px - 0.85, FORWARD_Y), xytext=(forward_boxes[k - 1][1] + 0.8, FORWARD_Y),
                    arrowprops=dict(arrowstyle="-|>", color="C0"))
ax.text(-0.6, FORWARD_Y + 0.75, "forward: what Figure 1 runs", fontsize=9, fontweight="bold")
ax.text(-0.6, NODE_Y + 0.95, "backward graph: the nodes it recorded, and what each keeps",
        fontsize=9, fontweight="bold")


def kept_lines(node):
    return [f"{f}: {size(b)}, {kind.split()[0]}" if b else f"{f}: {kind}" for f, b, kind in saved[node]]


style = {"new": dict(fc=to_rgba("C3", 0.16), ec="C3"), "none": dict(fc=to_rgba("C7", 0.08), ec="C7"),
         "leaf": dict(fc=to_rgba("C1", 0.15), ec="C1")}
pos = {addmm_1: (COLUMNS["linear1"], NODE_Y), relu_node: (COLUMNS["relu"], NODE_Y),
       addmm_2: (COLUMNS["linear2"], NODE_Y), loss.grad_fn: (COLUMNS["mse"], NODE_Y),
       t_1: (COLUMNS["linear1"] - 0.95, T_Y), by_label["AccumulateGrad\n0.bias"][0]: (COLUMNS["linear1"] + 1.0, T_Y),
       by_label["AccumulateGrad\n0.weight"][0]: (COLUMNS["linear1"] - 0.95, LEAF_Y),
       t_2: (COLUMNS["linear2"] - 0.95, T_Y), by_label["AccumulateGrad\n2.bias"][0]: (COLUMNS["linear2"] + 1.0, T_Y),
       by_label["AccumulateGrad\n2.weight"][0]: (COLUMNS["linear2"] - 0.95, LEAF_Y)}
boxes = {}
for node, (px, py) in pos.items():
    leaf = node.name().endswith("AccumulateGrad")
    kind = "leaf" if leaf else "new" if any(k == "new" for *_, k in saved[node]) else "none"
    text = "\n".join([label(node).replace("\n", "(") + (")" if leaf else "")] + kept_lines(node))
    boxes[node] = ax.text(px, py, text, ha="center", va="center", fontsize=8.5,
                          bbox=dict(boxstyle="round,pad=0.3", **style[kind]))
for node in pos:
    for child, _ in node.next_functions:
        if child is not None:
            ax.annotate("", xy=pos[child], xytext=pos[node],
                        arrowprops=dict(arrowstyle="-|>", color="C3", shrinkA=2, shrinkB=2,
                                        patchA=boxes[node].get_bbox_patch(),
                                        patchB=boxes[child].get_bbox_patch()))
for px in COLUMNS.values():
    ax.plot([px, px], [FORWARD_Y - 0.45, NODE_Y + 0.55], linestyle=":", color="C7", linewidth=1)
ax.text(0.5, 0.005, f"red: keeps a new tensor ({new_kib:.0f} KiB in all, {bytes_per_row:.0f} B per row of"
        " the batch); grey: nothing new; orange: leaves. Arrows: where each gradient goes.",
        ha="center", va="bottom", fontsize=8, transform=ax.transAxes)
ax.set_xlim(-0.8, 10.4)
ax.set_ylim(-0.35, 5.05)
ax.axis("off")
ax.set_title("Figure 1's forward and the graph it leaves: what each node keeps for backward",
             fontsize=10)
plt.show()

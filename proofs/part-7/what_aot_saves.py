"""What the compiled forward keeps for backward, next to what eager autograd saves: AOTAutograd's partitioner decides.

Eager: a torch.autograd.graph.saved_tensors_hooks pack hook sees every tensor the autograd
nodes of Figure 1's forward pass and loss save (Part 4), with its shape and storage.

Compiled: torch.compile traces forward and backward together into one joint graph
(AOTAutograd, torch/_functorch/aot_autograd.py) and a partitioner cuts it in two; every tensor
that crosses the cut is an extra output of the forward graph, kept until backward runs. The
script builds the backend Inductor uses up to that point, with Inductor's own partition
function (torch._inductor.compile_fx.partition_fn, which runs Inductor's joint-graph passes and
then min_cut_rematerialization_partition from torch/_functorch/partitioners.py with
compiler="inductor") and Inductor's decompositions (torch._inductor.decomposition), but with
compilers of its own that record the two FX graphs and run them unchanged, so no C++ compiler
is involved. These are private APIs: torch._dynamo.backends.common.aot_autograd,
torch._inductor.compile_fx.partition_fn, torch._inductor.decomposition.select_decomp_table;
the script fails at import if they move.

It does this for Figure 1's network and for the same network with a LayerNorm and a GELU in
place of the ReLU (the normalisation and the activation transformers use), where the
partitioner recomputes in backward a tensor that eager saves. AOTAutograd calls the graph's
inputs primals (primals_1, primals_2, ...: the parameters and the data, in the order of
Dynamo's graph); the script names each one.
"""
import re
import warnings

import matplotlib.pyplot as plt
import torch
import torch._dynamo  # private: see docstring
from torch import nn
from torch._dynamo.backends.common import aot_autograd
from torch._inductor.compile_fx import partition_fn as inductor_partition_fn
from torch._inductor.decomposition import select_decomp_table

warnings.filterwarnings("ignore", message="Your compiler for AOTAutograd is returning a function")
KIB = 1024
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
loss_fn = nn.MSELoss()


def eager_saved(model):
    """[(shape, kind)] of what eager autograd saved, and the new bytes it kept alive."""
    alive = {t.untyped_storage().data_ptr() for t in [x, y, *model.parameters()]}
    saved, new = [], {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        kind = "alive anyway" if ptr in alive else ("same storage again" if ptr in new else "new")
        if kind == "new":
            new[ptr] = t.untyped_storage().nbytes()
        saved.append((tuple(t.shape), kind))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss_fn(model(x), y)
    return saved, sum(new.values())


def compiled_saved(model):
    """(forward graph, backward graph, [(name, shape, kind)] crossing the cut, new bytes)."""
    graphs = {}

    def keep(name):
        def compiler(gm, example_inputs):
            graphs[name] = gm
            return gm.forward
        return compiler

    aot = aot_autograd(fw_compiler=keep("forward"), bw_compiler=keep("backward"),
                       partition_fn=inductor_partition_fn, decompositions=select_decomp_table())
    dynamo_inputs = []

    def backend(gm, example_inputs):  # Dynamo's graph: its inputs, in order, are AOTAutograd's primals
        dynamo_inputs.extend(readable(n.name) for n in gm.graph.nodes if n.op == "placeholder")
        return aot(gm, example_inputs)

    def forward_and_loss(x, y):
        return loss_fn(model(x), y)

    torch._dynamo.reset()
    loss = torch.compile(forward_and_loss, backend=backend)(x, y)
    loss.backward()
    fw, bw = graphs["forward"], graphs["backward"]
    inputs = [n for n in fw.graph.nodes if n.op == "placeholder"]
    primal_names = {n.name: dynamo_inputs[i] for i, n in enumerate(inputs)}  # primals_1 -> its input
    output = next(n for n in fw.graph.nodes if n.op == "output").args[0]
    crossing = []
    for node in output[1:]:  # output 0 is the loss; the rest is kept for backward
        shape = tuple(node.meta["val"].shape)
        kind = "alive anyway" if node in inputs else "new"
        name = f"{node.name} ({primal_names[node.name]})" if node in inputs else node.name
        crossing.append((name, shape, kind))
    new_bytes = sum(4 * _numel(s) for _, s, k in crossing if k == "new")
    return fw, bw, crossing, new_bytes


def readable(placeholder):
    """`l_model_modules_2_parameters_weight_` -> `layer 2 weight`; `l_x_` -> `x`."""
    name = re.sub(r"^[lg]_|_$", "", placeholder)
    return re.sub(r"^model_modules_(\d+)_parameters_(\w+?)_?$", r"layer \1 \2", name)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def ops(gm):
    return [n.target.__name__.split(".")[0] for n in gm.graph.nodes if n.op == "call_function"]


results = {}
for name, middle in [("Figure 1: ReLU", [nn.ReLU()]), ("LayerNorm, then GELU", [nn.LayerNorm(64), nn.GELU()])]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 64), *middle, nn.Linear(64, 1))
    eager, eager_bytes = eager_saved(model)
    fw, bw, crossing, compiled_bytes = compiled_saved(model)
    results[name] = dict(eager=eager, eager_bytes=eager_bytes, crossing=crossing,
                         compiled_bytes=compiled_bytes, fw_ops=ops(fw), bw_ops=ops(bw), fw=fw, bw=bw)


def target(node):
    """The operator a graph node calls, by name ('mul', 'sub', 'le', ...), or '' for any other node."""
    return node.target.__name__.split(".")[0] if node.op == "call_function" else ""


def shape(node):
    return tuple(node.meta["val"].shape) if "val" in node.meta else None


def saved(node):
    """Whether ``node`` is one of the backward graph's inputs, the tensors forward kept for it."""
    return isinstance(node, torch.fx.Node) and node.op == "placeholder"


def loss_factor_kept(fw):
    """The one 1024x1 tensor forward keeps is a `mul` of a `sub` by 2/N (pred - y, times 2/N), not pred."""
    output = next(n for n in fw.graph.nodes if n.op == "output").args[0]
    columns = [n for n in output[1:] if shape(n) == (1024, 1)]
    return (len(columns) == 1 and target(columns[0]) == "mul"
            and any(isinstance(a, torch.fx.Node) and target(a) == "sub" for a in columns[0].args)
            and any(isinstance(a, float) and abs(a - 2 / x.shape[0]) < 1e-12 for a in columns[0].args))


def mask_from_saved_output(bw):
    """Backward computes ReLU's mask with `le` straight from a tensor forward kept."""
    return any(target(n) == "le" and saved(n.args[0]) for n in bw.graph.nodes)


def gelu_input(graph_module):
    """The node GELU reads (LayerNorm's output): the first operand of the `mul` that feeds `erf`."""
    erf = next(n for n in graph_module.graph.nodes if target(n) == "erf")
    return erf.args[0].args[0]


def layer_norm_recomputed(fw, bw):
    """LayerNorm's output is not among what forward keeps, and backward computes it again: the
    input of its `erf` (GELU's backward) is an `add` made inside the backward graph, from a
    `mul` of a `sub` of the kept LayerNorm input by a kept statistic."""
    kept = next(n for n in fw.graph.nodes if n.op == "output").args[0][1:]
    if gelu_input(fw) in kept:
        return False
    rebuilt = gelu_input(bw)
    if target(rebuilt) != "add" or saved(rebuilt):
        return False
    for n in bw.graph.nodes:
        if target(n) == "sub" and saved(n.args[0]) and shape(n.args[0]) == (1024, 64):
            for user in n.users:
                if target(user) == "mul" and any(saved(a) and shape(a) == (1024, 1) for a in user.args):
                    return True
    return False


relu, ln = results["Figure 1: ReLU"], results["LayerNorm, then GELU"]
eager_saved_relu = len(relu["eager"])
compiled_saved_relu = len(relu["crossing"])
eager_kib_relu = relu["eager_bytes"] // KIB
compiled_kib_relu = relu["compiled_bytes"] // KIB
relu_same_bytes = relu["eager_bytes"] == relu["compiled_bytes"]
relu_crossing = ", ".join(f"{n} {list(s)}" for n, s, _ in relu["crossing"])
loss_factor_in_forward = loss_factor_kept(relu["fw"])
mask_recomputed = mask_from_saved_output(relu["bw"])
eager_saved_ln = len(ln["eager"])
compiled_saved_ln = len(ln["crossing"])
eager_kib_ln = ln["eager_bytes"] // KIB
compiled_kib_ln = ln["compiled_bytes"] // KIB
ln_big_eager = sum(s == (1024, 64) for s, k in ln["eager"] if k == "new")
ln_big_compiled = sum(s == (1024, 64) for _, s, k in ln["crossing"] if k == "new")
ln_recomputed_in_backward = layer_norm_recomputed(ln["fw"], ln["bw"])
ln_crossing = ", ".join(f"{n} {list(s)}" for n, s, _ in ln["crossing"])

for name, r in results.items():
    print(f"== {name}")
    print(f"eager autograd saved {len(r['eager'])} tensors: "
          + ", ".join(f"{list(s)} ({k})" for s, k in r["eager"]))
    print(f"  new storage kept: {r['eager_bytes'] / KIB:.0f} KiB")
    print(f"compiled forward returns the loss and {len(r['crossing'])} tensors for backward: "
          + ", ".join(f"{n} {list(s)} ({k})" for n, s, k in r["crossing"]))
    print(f"  new storage kept: {r['compiled_bytes'] / KIB:.0f} KiB")
    print(f"  forward graph ops: {', '.join(r['fw_ops'])}")
    print(f"  backward graph ops: {', '.join(r['bw_ops'])}")
print(f"Figure 1: the kept 1024x1 column is a mul of a sub (the loss's factor, not pred): {loss_factor_in_forward}; "
      f"backward's le reads a kept tensor: {mask_recomputed}")
print(f"LayerNorm: its output is not kept, and backward rebuilds it from the kept input and statistics: "
      f"{ln_recomputed_in_backward}")

fig, axes = plt.subplots(1, 2, figsize=(8, 3.6), layout="constrained")
for ax, (name, r) in zip(axes, results.items()):
    bars = [("eager", r["eager_bytes"] / KIB, len(r["eager"])),
            ("compiled", r["compiled_bytes"] / KIB, len(r["crossing"]))]
    ax.bar(range(2), [b[1] for b in bars], color=["C0", "C1"])
    for i, (label, kib, n) in enumerate(bars):
        ax.text(i, kib, f"{kib:.0f} KiB\n{n} tensors saved", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(2), [b[0] for b in bars])
    ax.set_ylim(0, max(b[1] for b in bars) * 1.35)
    ax.set_ylabel("new memory kept for backward (KiB)")
    ax.set_title(name, fontsize=10)
fig.suptitle("What forward keeps for backward: eager autograd against the partitioner")
plt.show()

"""What Dynamo captured from Figure 1's forward pass: one FX graph, and the guards that say when it may be reused.

Compiles `loss_fn(model(x), y)` from Figure 1 with torch.compile and a backend of its own that
only records the FX graph Dynamo hands it (torch.fx.GraphModule) and runs it unchanged, so no
C++ compiler is involved. Dynamo (torch/_dynamo/) reads the function's bytecode, runs it
symbolically and writes every tensor operation it meets into the graph, inlining the
nn.Module calls on the way; the parameters become graph inputs.

The guards are read from Dynamo's cache entry for the function's code object, through the
private torch._dynamo.eval_frame._debug_get_cache_entry_list and the entry's guard_manager
(torch/_dynamo/guards.py); the script raises if they are gone. Printing the guard manager
lists every guard by kind; guard_manager.check() evaluates them on new arguments, which is what
Dynamo does before each call to decide whether the compiled code may run. Also private:
torch._dynamo.reset().
"""
import re
import time
from collections import Counter

import matplotlib.pyplot as plt
import torch
import torch._dynamo  # private: see docstring
from torch import nn

torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()

graphs = []


def recording_backend(gm, example_inputs):
    """A torch.compile backend: keep the FX graph, run it as it is."""
    graphs.append(gm)
    return gm.forward


def forward_and_loss(x, y):
    return loss_fn(model(x), y)


torch._dynamo.reset()
compiled = torch.compile(forward_and_loss, backend=recording_backend)
t0 = time.perf_counter()
loss = compiled(x, y)
capture_s = time.perf_counter() - t0
same_result = bool(torch.equal(loss, forward_and_loss(x, y)))
n_graphs = len(graphs)
graph = graphs[0].graph
placeholders = [n.name for n in graph.nodes if n.op == "placeholder"]
calls = [n for n in graph.nodes if n.op in ("call_function", "call_method", "call_module")]
call_names = [getattr(n.target, "__name__", str(n.target)) for n in calls]
n_graph_inputs = len(placeholders)
n_graph_calls = len(calls)
graph_call_list = ", ".join(call_names)
no_module_calls = not any(n.op == "call_module" for n in graph.nodes)

get_entries = getattr(torch._dynamo.eval_frame, "_debug_get_cache_entry_list", None)
if get_entries is None:
    raise RuntimeError("torch._dynamo.eval_frame._debug_get_cache_entry_list is gone")
entries = get_entries(forward_and_loss.__code__)
if len(entries) != 1 or not hasattr(entries[0], "guard_manager"):
    raise RuntimeError(f"expected one cache entry with a guard_manager, found {entries!r}")
guards = entries[0].guard_manager
guard_text = str(guards)
kinds = Counter(re.findall(r"\+- ([A-Z][A-Z_]+):", guard_text))
n_guards = sum(kinds.values())
tensor_guards = [line.strip("| +-").split("  #")[0] for line in guard_text.splitlines()
                 if "TENSOR_MATCH" in line]
x_guard = next(g for g in tensor_guards if "L['x']" in g)
global_state_line = next(line.strip("| +-") for line in guard_text.splitlines() if "GLOBAL_STATE" in line)
guards_grad_mode = '"grad_mode":true' in global_state_line
guards_num_threads = '"num_threads"' in global_state_line

trials = {
    "a new batch of the same shape": {"x": torch.randn(1024, 8), "y": torch.randn(1024, 1)},
    "a batch of 512": {"x": torch.randn(512, 8), "y": torch.randn(512, 1)},
    "float64 data": {"x": x.double(), "y": y.double()},
    "x requiring grad": {"x": x.clone().requires_grad_(), "y": y},
    "x transposed twice (other strides)": {"x": x.t().contiguous().t(), "y": y},
}
verdicts = {name: bool(guards.check(args)) for name, args in trials.items()}
with torch.no_grad():
    verdicts["the same data under no_grad"] = bool(guards.check({"x": x, "y": y}))
reasons = {name: guards.check_verbose(args).verbose_code_parts[0] for name, args in trials.items()
           if not verdicts[name]}
reason_512 = reasons["a batch of 512"]
reason_float64 = reasons["float64 data"]
reason_requires_grad = reasons["x requiring grad"]
reason_strides = reasons["x transposed twice (other strides)"]
with torch.no_grad():
    reason_no_grad = guards.check_verbose({"x": x, "y": y}).verbose_code_parts[0]
reasons["the same data under no_grad"] = reason_no_grad
reuse_same_shape = verdicts["a new batch of the same shape"]
rejects_all_others = not any(v for k, v in verdicts.items() if k != "a new batch of the same shape")

print(f"captured {n_graphs} graph in {capture_s:.2f} s; it gives the same loss as eager: {same_result}")
print(f"graph inputs ({n_graph_inputs}): {', '.join(placeholders)}")
print(f"graph calls ({n_graph_calls}): {graph_call_list}")
print(graphs[0].code.strip())
print(f"\n{n_guards} guards: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
print("the tensor guards:")
for g in tensor_guards:
    print("  " + g)
print("  " + global_state_line[:160] + "...")
print("\nguard_manager.check() on new arguments:")
for name, ok in verdicts.items():
    print(f"  {name:<36} {'reuse' if ok else 'recompile'}"
          + (f"   ({reasons[name]})" if name in reasons else ""))

# Figure: the captured graph, drawn layer by layer.
depth = {}
for node in graph.nodes:
    parents = [a for a in node.all_input_nodes]
    depth[node] = 1 + max((depth[p] for p in parents), default=-1)
layers = {}
for node in graph.nodes:
    layers.setdefault(depth[node], []).append(node)
position = {}
for d, nodes in layers.items():
    for i, node in enumerate(nodes):
        position[node] = (d, -(i - (len(nodes) - 1) / 2))
fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
for node in graph.nodes:
    for parent in node.all_input_nodes:
        (x0, y0), (x1, y1) = position[parent], position[node]
        ax.annotate("", (x1 - 0.28, y1), (x0 + 0.28, y0),
                    arrowprops={"arrowstyle": "->", "color": "C7", "lw": 1})
for node, (px, py) in position.items():
    if node.op == "placeholder":
        label, color = re.sub(r"^(g_model_modules_|l_)", "", node.name).replace("_parameters_", ".").strip("_"), "C0"
    elif node.op == "output":
        label, color = "output", "C7"
    else:
        label, color = getattr(node.target, "__name__", str(node.target)), "C1"
    ax.text(px, py, label, ha="center", va="center", fontsize=8,
            bbox={"boxstyle": "round", "facecolor": color, "alpha": 0.35, "edgecolor": color})
ax.set_xlim(-0.6, max(layers) + 0.6)
ax.set_ylim(-3.2, 3.2)
ax.axis("off")
ax.set_title(f"The FX graph Dynamo captured: {n_graph_inputs} inputs, {n_graph_calls} calls, "
             f"guarded by {n_guards} guards")
plt.show()

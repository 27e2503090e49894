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
Dynamo does before each call to decide whether the compiled code may run. Then the global
`model` is replaced, first by a new network of the same shapes (other parameter values, other
objects), then by one with a hidden layer of 32, and the compiled function is called again: the
graphs Dynamo compiled are counted. Also private: torch._dynamo.reset().
"""
import re
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
loss = compiled(x, y)          # the first call traces, and hands the graph to the backend
print(graphs[0].code)          # the FX graph, as Python code
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
guard_lines = [line for line in guard_text.splitlines() if "_MATCH: " in line]
id_matched = sorted({re.search(r"___check_obj_id\((.*?), \d+\)", g).group(1) for g in guard_lines if "ID_MATCH" in g})
module_type_guards = sum("TYPE_MATCH" in g and "type=<class 'torch.nn.modules." in g for g in guard_lines)
module_id_guards = sum("ID_MATCH" in g and "type=<class 'torch.nn.modules." in g for g in guard_lines)
modules_by_type_not_identity = module_type_guards == 5 and module_id_guards == 0  # Sequential, 2 Linear, ReLU, MSELoss

# Another network of the same shapes, then one of another width, in place of the global `model`.
first_model = model
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
same_shape_loss = compiled(x, y)
new_model_reuses_graph = len(graphs) == 1 and bool(torch.allclose(same_shape_loss, forward_and_loss(x, y)))
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
compiled(x, y)
other_width_recompiles = len(graphs) == 2
model = first_model

print(f"captured {n_graphs} graph; it gives the same loss as eager: {same_result}")
print(f"graph inputs ({n_graph_inputs}): {', '.join(placeholders)}")
print(f"graph calls ({n_graph_calls}): {graph_call_list}")
print(f"\n{n_guards} printed guard lines (one per check; a tensor's dimension-marking guard prints five): " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
print("the tensor guards:")
for g in tensor_guards:
    print("  " + g)
print("  " + global_state_line[:160] + "...")
print(f"ID_MATCH (object identity) on: {', '.join(id_matched)}")
print(f"nn.Module objects checked by type (TYPE_MATCH): {module_type_guards}; by identity (ID_MATCH): "
      f"{module_id_guards}")
print("\nguard_manager.check() on new arguments:")
for name, ok in verdicts.items():
    print(f"  {name:<36} {'reuse' if ok else 'recompile'}"
          + (f"   ({reasons[name]})" if name in reasons else ""))

print(f"\na new network of the same shapes in place of `model` reused the graph: {new_model_reuses_graph}; "
      f"one with a hidden layer of 32 was compiled again: {other_width_recompiles}")

# Figure: the guards, by kind, with what each kind checked here.
WHAT = {
    "DIMENSION_DYNAMIC_MARKING_GUARD": "no size marked dynamic by hand (5 per tensor)",
    "TYPE_MATCH": "the type of each module, hook and parameter dict",
    "ID_MATCH": "the identity of Python modules, builtins, code",
    "TENSOR_MATCH": "each tensor: keys, dtype, grad, sizes, strides",
    "DICT_CONTAINS": "no module instance has its own forward",
    "EQUALS_MATCH": "constants read: module names, reduction",
    "LAMBDA_GUARD": "ambient state (saved-tensor hooks, ...)",
    "GLOBAL_STATE": "grad mode, threads, autocast, ...",
    "TORCH_FUNCTION_MODE_STACK": "the same torch-function modes active",
    "DEFAULT_DEVICE": "no default device set",
    "NO_TENSOR_ALIASING": "x and y are different tensors",
    "FALSE_MATCH": "ReLU's inplace is False",
}
ordered = kinds.most_common()
fig, ax = plt.subplots(figsize=(8, 3.9), layout="constrained")
ax.barh(range(len(ordered)), [n for _, n in ordered], color="C0", alpha=0.7)
for i, (kind, n) in enumerate(ordered):
    ax.text(n, i, f" {n}   {WHAT.get(kind, '')}", va="center", fontsize=7.5)
ax.set_yticks(range(len(ordered)), [k for k, _ in ordered], fontsize=7)
ax.invert_yaxis()
ax.set_xlim(0, max(n for _, n in ordered) * 2.3)
ax.set_xlabel("guards of this kind")
ax.set_title(f"The {n_guards} printed guard lines on Figure 1's compiled forward pass, by kind")
plt.show()

"""What torch.compile does with Figure 1's forward pass, stage by stage, in the order the stages run.

Compiles `loss_fn(model(x), y)` (Figure 1's network, as its nn.Sequential) with a backend built
the way Inductor's own compile_fx builds its first half: AOTAutograd (the private
torch._dynamo.backends.common.aot_autograd) with Inductor's partition function
(torch._inductor.compile_fx.partition_fn) and Inductor's decompositions
(torch._inductor.decomposition.select_decomp_table). Each stage is wrapped so that it logs when
it runs and what it was handed; where Inductor would write C++ for each graph, the compilers
here keep the graph and run it unchanged, so no C++ compiler is involved. The log shows the
order: Dynamo traces the call and hands the backend an FX graph; AOTAutograd traces forward and
backward together into one joint graph and the partitioner cuts it; the forward graph is
compiled before the first call returns, the backward graph only when backward first runs.

Dynamo runs the function on fake tensors (torch._subclasses.fake_tensor.FakeTensor, private):
the example value on each node of the graph it hands over is one. What it puts in place of the
function is read from its cache entry (the private
torch._dynamo.eval_frame._debug_get_cache_entry_list): the residual bytecode, disassembled with
dis, and the guards. A second call with a new batch of the same shape runs no stage at all.
The script raises if one of these private names is gone.
"""
import dis
import re

import matplotlib.pyplot as plt
import torch
import torch._dynamo  # private: see docstring
from matplotlib.patches import FancyBboxPatch
from torch import nn
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func  # private: AOTAutograd's calling convention
from torch._inductor.compile_fx import partition_fn as inductor_partition_fn
from torch._inductor.decomposition import select_decomp_table
from torch._subclasses.fake_tensor import FakeTensor

torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()

log = []  # (stage, what it was handed), in the order the stages ran


def calls(gm):
    return sum(n.op.startswith("call") for n in gm.graph.nodes)


def forward_compiler(gm, example_inputs):
    log.append(("forward graph compiled", calls(gm)))
    return make_boxed_func(gm.forward)


def backward_compiler(gm, example_inputs):
    log.append(("backward graph compiled", calls(gm)))
    return make_boxed_func(gm.forward)


def partition(joint, joint_inputs, **options):
    log.append(("joint graph partitioned", calls(joint)))
    return inductor_partition_fn(joint, joint_inputs, **options)


aot = aot_autograd(fw_compiler=forward_compiler, bw_compiler=backward_compiler,
                   partition_fn=partition, decompositions=select_decomp_table())
fake_values = []


def backend(gm, example_inputs):
    """What torch.compile calls with Dynamo's FX graph; Inductor's compile_fx stands here."""
    log.append(("Dynamo handed the backend an FX graph", calls(gm)))
    fake_values.extend(n.meta.get("example_value") for n in gm.graph.nodes if n.op != "output")
    return aot(gm, example_inputs)


def forward_and_loss(x, y):
    return loss_fn(model(x), y)


torch._dynamo.reset()
compiled = torch.compile(forward_and_loss, backend=backend)
log.append(("first call starts", None))
loss = compiled(x, y)
log.append(("first call returned", None))
loss.backward()
log.append(("backward returned", None))
log_before_second = len(log)
compiled(torch.randn(1024, 8), torch.randn(1024, 1))
second_call_ran_no_stage = len(log) == log_before_second
same_loss = bool(torch.allclose(loss, forward_and_loss(x, y)))

stages = [name for name, _ in log]
ORDER = ["first call starts", "Dynamo handed the backend an FX graph", "joint graph partitioned",
         "forward graph compiled", "first call returned", "backward graph compiled", "backward returned"]
stages_in_order = stages == ORDER
handed = dict(log)
dynamo_calls = handed["Dynamo handed the backend an FX graph"]
joint_calls = handed["joint graph partitioned"]
forward_calls = handed["forward graph compiled"]
backward_calls = handed["backward graph compiled"]
traced_on_fake_tensors = all(isinstance(v, FakeTensor) for v in fake_values if isinstance(v, torch.Tensor))

get_entries = getattr(torch._dynamo.eval_frame, "_debug_get_cache_entry_list", None)
if get_entries is None:
    raise RuntimeError("torch._dynamo.eval_frame._debug_get_cache_entry_list is gone")
entries = get_entries(forward_and_loss.__code__)
if len(entries) != 1 or not hasattr(entries[0], "code"):
    raise RuntimeError(f"expected one cache entry with its code, found {entries!r}")
residual = entries[0].code
original_instructions = len(list(dis.get_instructions(forward_and_loss.__code__)))
residual_instructions = len(list(dis.get_instructions(residual)))
compiled_fn_names = [n for n in residual.co_names if n.startswith("__compiled_fn")]
residual_calls_compiled_fn = len(compiled_fn_names) == 1
n_guards = sum(1 for line in str(entries[0].guard_manager).splitlines() if "+- " in line and ":" in line
               and line.split("+- ", 1)[1].split(":", 1)[0].isupper())
compiled_fn = re.sub(r"_[0-9a-f]{8}(_[0-9a-f]{4}){3}_[0-9a-f]{12}$", "", compiled_fn_names[0])
INTERNAL = ("__import", "record_pregraph", "graph_out", "tmp", "__compiled_fn")
fetched = []  # what the residual bytecode loads to hand the compiled graph, in order
for ins in dis.get_instructions(residual):
    if ins.opname in ("LOAD_GLOBAL", "LOAD_FAST", "LOAD_ATTR", "LOAD_CONST") and ins.argval is not None:
        if not str(ins.argval).startswith(INTERNAL):
            fetched.append(repr(ins.argval) if ins.opname == "LOAD_CONST" else str(ins.argval))

print("the stages, in the order they ran:")
for name, n in log:
    print(f"  {name}" + (f" ({n} operator calls)" if n is not None else ""))
print(f"in that order: {stages_in_order}; a second call, new batch of the same shape, ran no stage: "
      f"{second_call_ran_no_stage}")
print(f"Dynamo traced on fake tensors (no data): {traced_on_fake_tensors}")
print(f"\nforward_and_loss's own bytecode: {original_instructions} instructions; the residual bytecode "
      f"Dynamo runs in its place: {residual_instructions} instructions, guarded by {n_guards} printed guard lines")
print(f"it calls {compiled_fn} (Dynamo's name for the compiled graph) once; what it loads, in order:")
print("  " + " ".join(fetched))
print(f"\nthe compiled graphs give the same loss as the Python: {same_loss}")

# The figure: the pipeline, at compile time (first call) and at every later call.
fig, ax = plt.subplots(figsize=(8, 3.9), layout="constrained")
ax.set_xlim(-1, 101)
ax.set_ylim(0, 52)
ax.axis("off")


def box(x0, y0, w, title, body, color):
    ax.add_patch(FancyBboxPatch((x0, y0), w, 13, boxstyle="round,pad=0.6", facecolor=color, alpha=0.25,
                                edgecolor=color))
    ax.text(x0 + w / 2, y0 + 9.8, title, ha="center", va="center", fontsize=9, fontweight="bold")
    ax.text(x0 + w / 2, y0 + 4.3, body, ha="center", va="center", fontsize=8)


def arrow(x0, x1, yy):
    ax.annotate("", (x1, yy), (x0, yy), arrowprops={"arrowstyle": "->", "color": "C7", "lw": 1.2})


ax.text(0, 49, "first call: compile", fontsize=9, style="italic")
row = 30
box(0.5, row, 15, "your function", f"Python bytecode\n{original_instructions} instructions", "C7")
box(20, row, 19, "Dynamo", f"FX graph: {dynamo_calls} calls\n{n_guards} guard lines\nresidual bytecode", "C0")
box(43.5, row, 17, "AOTAutograd", f"joint graph\nforward + backward\n{joint_calls} ATen calls", "C2")
box(65, row, 15, "partitioner", f"forward: {forward_calls} calls\nbackward: {backward_calls} calls", "C2")
box(84.5, row, 15, "Inductor", "C++ kernels and\na Python call()\nper graph", "C1")
for a, b in ((16.4, 19.4), (39.9, 42.9), (61.4, 64.4), (80.9, 83.9)):
    arrow(a, b, row + 6.5)
ax.text(0, 21, "every later call", fontsize=9, style="italic")
row = 3
box(0.5, row, 22, "guards", f"{n_guards} printed checks on\narguments and globals", "C0")
box(27, row, 22, "residual bytecode", "fetches the parameters,\ncalls the compiled forward", "C0")
box(53.5, row, 20, "compiled forward", "returns the loss and\nwhat backward needs", "C1")
box(78, row, 21.5, "loss.backward()", "runs the compiled backward\n(compiled at the first one)", "C1")
for a, b in ((23.1, 26.4), (49.6, 52.9), (74.1, 77.4)):
    arrow(a, b, row + 6.5)
ax.set_title("torch.compile on Figure 1's forward pass and loss: the stages, in the order they run")
plt.show()

"""Building Figure 1's model: what __init__, .to() and the optimizer do, and what the step keeps in memory.

Constructs Figure 1's Net under a TorchDispatchMode (torch.utils._python_dispatch, an
underscore module documented for extending PyTorch) to see the operators construction runs:
each nn.Linear allocates its weight and bias empty (torch/nn/modules/linear.py, __init__) and
reset_parameters fills them in place with uniform_ (through init.kaiming_uniform_ and
init.uniform_, torch/nn/init.py). nn.Module.__setattr__ (torch/nn/modules/module.py) files every
Parameter assigned to a module under its _parameters and every sub-module under _modules
(nn.Sequential files its children with add_module, into the same _modules); the script checks
that model.parameters() is exactly the walk of those dictionaries, and that a Parameter set on a
module with object.__setattr__ (bypassing Module.__setattr__) is not found. Then .to("cpu") on a
model already there, .to(torch.float64) on a small Linear (same module, same Parameter objects,
new float64 storages), and the optimizer:
torch.optim.Adam keeps references to the very Parameter objects and makes its state lazily, on
the first step (Adam._init_group in torch/optim/adam.py). The bytes of every tensor the program
holds during a step are counted from their storages; the activations backward needs are
counted by a saved_tensors_hooks pack hook (new storages only: a parameter or the batch is
alive anyway), and compared with a prediction from the shapes: ReLU's output (batch x hidden
floats) and the prediction (batch x 1 floats).
"""
from collections import Counter

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.layers(x)


class Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


with Ops() as construction:
    model = Net()
construction_ops = Counter(construction.names)
construction_op_list = ", ".join(f"{name.split('.')[0]} ×{n}" for name, n in construction_ops.items())
init_fills_in_place = construction_ops["uniform_.default"] == 4
allocations_empty = construction_ops["empty.memory_format"] == 4

registered = {name: list(module._parameters) for name, module in model.named_modules() if module._parameters}
walked = [p for m in model.modules() for p in m._parameters.values()]
parameters_walk_the_dictionaries = [id(p) for p in model.parameters()] == [id(p) for p in walked]
hidden_away = nn.Linear(2, 2)
object.__setattr__(hidden_away, "extra", nn.Parameter(torch.zeros(3)))  # not through Module.__setattr__
bypass_is_not_found = all(p is not hidden_away.extra for p in hidden_away.parameters())
param_names = [name for name, _ in model.named_parameters()]
params = list(model.parameters())
n_param_tensors = len(params)
n_params = sum(p.numel() for p in params)

before = [p.data_ptr() for p in params]
same_module = model.to("cpu") is model
to_cpu_copied_nothing = [p.data_ptr() for p in model.parameters()] == before  # Module.to returns self anyway

# A real conversion, on a copy of the network: .to(torch.float64) keeps the module and its
# Parameter objects, and gives each new float64 data in a new storage.
converting = nn.Linear(2, 2)
old_params = list(converting.parameters())
old_ptrs = [p.data_ptr() for p in old_params]
to_float64_same_module = converting.to(torch.float64) is converting
to_float64_same_parameters = all(a is b for a, b in zip(converting.parameters(), old_params))
to_float64_new_data = all(p.dtype == torch.float64 and p.data_ptr() != ptr
                          for p, ptr in zip(converting.parameters(), old_ptrs))
to_keeps_parameters = to_float64_same_module and to_float64_same_parameters and to_float64_new_data

loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
holds_same_objects = all(a is b for a, b in zip(optimizer.param_groups[0]["params"], params))
state_before_step = len(optimizer.state)


def nbytes(t):
    return t.untyped_storage().nbytes()


# One step of Figure 1's loop, with a pack hook counting what backward will need.
alive = {t.untyped_storage().data_ptr() for t in [x, y, *params]}
saved_new = {}


def pack(t):
    ptr = t.untyped_storage().data_ptr()
    if ptr not in alive:
        saved_new[ptr] = nbytes(t)
    return t


with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    pred = model(x)
    loss = loss_fn(pred, y)
loss.backward()
grad_bytes = sum(nbytes(p.grad) for p in params)
optimizer.step()
state_after_step = len(optimizer.state)
state_keys = sorted(next(iter(optimizer.state.values())))
state_key_list = ", ".join(state_keys)
first_state = next(iter(optimizer.state.values()))
step_counter_dtype = str(first_state["step"].dtype).replace("torch.", "")
step_counter_on_cpu = all(s["step"].device.type == "cpu" and s["step"].dim() == 0 for s in optimizer.state.values())
# Where the parameters are not on the CPU, the counter still is: Adam over parameters on the
# "meta" device (shapes, no data) puts each step counter on the CPU (Adam._init_group).
meta_params = [nn.Parameter(torch.empty(4, device="meta"))]
for p in meta_params:
    p.grad = torch.empty(4, device="meta")
meta_optimizer = torch.optim.Adam(meta_params, lr=0.01)
meta_optimizer.step()
meta_step = meta_optimizer.state[meta_params[0]]["step"]
step_counter_on_cpu_off_cpu = meta_step.device.type == "cpu" and meta_params[0].device.type == "meta"
optimizer.zero_grad()
grads_none_after_zero_grad = all(p.grad is None for p in params)

param_bytes = sum(nbytes(p) for p in params)
exp_avg_bytes = sum(nbytes(s["exp_avg"]) for s in optimizer.state.values())
exp_avg_sq_bytes = sum(nbytes(s["exp_avg_sq"]) for s in optimizer.state.values())
step_bytes = sum(nbytes(s["step"]) for s in optimizer.state.values())
adam_state_bytes = exp_avg_bytes + exp_avg_sq_bytes + step_bytes
adam_twice_params = exp_avg_bytes + exp_avg_sq_bytes == 2 * param_bytes
data_bytes = nbytes(x) + nbytes(y)
activation_bytes = sum(saved_new.values())
batch, hidden = x.shape[0], model.layers[0].out_features
predicted_activation_bytes = 4 * batch * hidden + 4 * batch * 1  # ReLU's output, and the prediction
activations_as_predicted = activation_bytes == predicted_activation_bytes
data_vs_params = data_bytes / param_bytes
activations_vs_params = activation_bytes / param_bytes
KIB = 1024
param_kib = param_bytes / KIB
data_kib = data_bytes / KIB
activation_kib = activation_bytes / KIB
adam_state_kib = adam_state_bytes / KIB

print(f"operators run while Net() was built: {dict(construction_ops)}")
print(f"parameters registered by Module.__setattr__: {registered}")
print(f"model.parameters() walks the modules' _parameters dictionaries: {parameters_walk_the_dictionaries}; "
      f"a Parameter set with object.__setattr__ is not found: {bypass_is_not_found}")
print(f"model.parameters(): {param_names} ({n_param_tensors} tensors, {n_params:,} numbers)")
print(f"model.to('cpu') returned the same module: {same_module}; same storages: {to_cpu_copied_nothing}")
print(f"Adam holds the very Parameter objects: {holds_same_objects}; "
      f"state entries before the first step: {state_before_step}, after: {state_after_step} {state_keys}")
print(f"each step counter is a 0-d {step_counter_dtype} tensor on the CPU: {step_counter_on_cpu}")
print(f"with parameters on the meta device, the step counter is on {meta_step.device.type}: "
      f"{step_counter_on_cpu_off_cpu}")
print(f".to(torch.float64): same module {to_float64_same_module}, same Parameter objects "
      f"{to_float64_same_parameters}, new float64 storages {to_float64_new_data}")
print(f"after zero_grad() every .grad is None: {grads_none_after_zero_grad}")
print("\nbytes the program holds (storages):")
rows = [("batch x and target y", data_bytes, "the whole run"),
        ("parameters", param_bytes, "the whole run"),
        ("Adam exp_avg + exp_avg_sq + step", adam_state_bytes, "from the first step on"),
        ("gradients", grad_bytes, "backward to zero_grad"),
        ("activations saved for backward", activation_bytes, "forward to backward")]
for name, size, when in rows:
    print(f"  {name:<36}{size:>10,} B  ({when})")
print(f"the data holds {data_vs_params:.0f} times the parameters' bytes, "
      f"the saved activations {activations_vs_params:.0f} times")
print(f"predicted from the shapes, 4 B x ({batch} x {hidden} + {batch} x 1) = {predicted_activation_bytes:,} B "
      f"for the activations: exactly what the pack hook saw: {activations_as_predicted}")

fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
colors = ["C7", "C0", "C1", "C2", "C3"]
for i, (name, size, when) in enumerate(rows):
    ax.barh(i, size / KIB, color=colors[i])
    ax.text(size / KIB, i, f"  {size / KIB:,.1f} KiB, {when}", va="center", fontsize=8)
ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
ax.invert_yaxis()
ax.set_xlim(0, max(r[1] for r in rows) / KIB * 1.6)
ax.set_xlabel("KiB (to scale)")
ax.set_title("What Figure 1's program keeps in memory during one step")
plt.show()

"""Figure 1's forward pass, kernel by kernel: its cost in tolls, its threads, its library, its mean's accuracy.

The data and the model are Figure 1's (proofs/part-0/training_program.py): the same seed, a
batch of 1024 rows of 8 features, Linear(8, 64), ReLU, Linear(64, 1), MSELoss. A
TorchDispatchMode (torch.utils._python_dispatch) lists the ATen operators one forward pass
calls, and one step of Adam after the first. Each kernel of the forward is then timed alone
on Figure 1's own tensors, under torch.no_grad, with one thread: the minimum of 9 batches
of 200 calls, the kernels interleaved, as the calling thread's CPU time
(time.thread_time_ns), against the toll, against the whole forward pass, and against the
whole forward pass on a batch twice as big (the same rows twice): a time that is fixed per
call does not grow with the batch, so how much the forward grew says how much of it is paid
per call. The toll is
the one of three_costs.py, a one-element add into an output it is given, timed again here
among the kernels, so that a count in tolls compares two times of the same run. The
prediction for relu: it reads 4 bytes and writes 4 per element and allocates its output, as
a clone of a tensor of the same shape does, so it should take what that clone takes (timed
alongside, in cache like relu's own tensors): its time is bytes, not the comparison with
zero. That holds where
relu's loop has hand-written vectors (vector_loops: x86's AVX2 and AVX512 builds, NEON on
ARM); with capability DEFAULT on x86 it is slower than its bytes. Threads: with two
allowed, the threads that relu and mse_loss woke, counted from each thread's CPU time in
/proc/self/task (Linux; as in grain_size_threads.py). Libraries: a
second process runs the two layers with MKL_VERBOSE=1, and the script reads what MKL logged
(on a build without MKL, nothing). Accuracy: the loss against the same formula in float64
on the same float32 values, over 20 batches of 1,024 pairs of standard normal numbers
(Figure 1's batch size; the error includes the subtraction and the squaring). Last, the rows Figure 1's
target reads, x[:, :1] * x[:, 1:2], are columns with a stride of 8 elements: the multiply
is timed on them and on contiguous copies.
"""
import os
import platform
import re
import subprocess
import sys
import time

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.autograd import profiler_legacy
from torch.utils._python_dispatch import TorchDispatchMode

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(1024, 8)                             # Figure 1's data and target
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, x):
        return self.layers(x)


model = Net()
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


class Calls(TorchDispatchMode):
    """Record every ATen operator called below autograd, with the largest tensor it saw."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        sizes = [a.numel() for a in list(args) + list((kwargs or {}).values()) if isinstance(a, torch.Tensor)]
        self.calls.append((str(func.overloadpacket.__name__), max(sizes, default=0)))
        return func(*args, **(kwargs or {}))


with Calls() as forward_log:
    loss = loss_fn(model(x), y)
forward_ops = ", ".join(name for name, _ in forward_log.calls if name not in ("t", "detach"))
loss.backward()
optimizer.step()  # the first step also creates Adam's state
optimizer.zero_grad()
loss_fn(model(x), y).backward()
with Calls() as adam_log:
    optimizer.step()
n_adam_calls = len(adam_log.calls)
adam_max_numel = max(n for _, n in adam_log.calls)

# Each kernel alone, on Figure 1's tensors, one thread.
lin1, _, lin2 = model.layers
with torch.no_grad():
    h = torch.relu(lin1(x))
    pred = lin2(h)
    w1t, w2t = lin1.weight.t(), lin2.weight.t()
    one, one_out = torch.ones(1), torch.empty(1)
    a64 = torch.rand(1024, 64)
    pre_relu = torch.addmm(lin1.bias, x, w1t)
    KERNELS = {
        "addmm, layer 1": lambda: torch.addmm(lin1.bias, x, w1t),
        "relu": lambda: torch.relu(pre_relu),
        "addmm, layer 2": lambda: torch.addmm(lin2.bias, h, w2t),
        "mse_loss": lambda: loss_fn(pred, y),
    }
    x2, y2 = torch.cat([x, x]), torch.cat([y, y])  # the same rows twice: a batch of 2,048
    OTHERS = {"toll": lambda: torch.add(one, one, out=one_out), "copy, 65,536": lambda: a64.clone(),
              "forward": lambda: loss_fn(model(x), y),
              "mse_loss, ATen op alone": lambda: torch._C._nn.mse_loss(pred, y, 1), "forward, batch 2,048": lambda: loss_fn(model(x2), y2)}
    everything = {**KERNELS, **OTHERS}
    for fn in everything.values():
        fn()
    best = {name: float("inf") for name in everything}
    for _ in range(9):
        for name, fn in everything.items():
            t0 = time.thread_time_ns()
            for _ in range(200):
                fn()
            best[name] = min(best[name], (time.thread_time_ns() - t0) / 200 / 1e3)
us = best
toll_us = us["toll"]
kernel_us = {name: us[name] for name in KERNELS}
in_tolls = {name: t / toll_us for name, t in kernel_us.items()}
forward_us = us["forward"]
# Doubling the batch: a time T = F + W * batch grows by the factor (F + 2W) / (F + W), so what
# it grew by, minus one, is the share of the forward that grows with the batch; the rest is
# paid per call, whatever the batch.
double_batch_ratio = us["forward, batch 2,048"] / forward_us
fixed_share_pct = 100 * (2 - double_batch_ratio)
forward_over_kernels = forward_us / sum(kernel_us.values())
relu_predicted_us = us["copy, 65,536"]  # the same bytes as relu, the same toll, the same allocation
relu_over_predicted = us["relu"] / relu_predicted_us
kernels_share = sum(kernel_us.values()) / forward_us
kernels_share_pct = 100 * kernels_share
# mse_loss as the forward calls it is the nn.MSELoss module: its Python, F.mse_loss's checks and
# a broadcast_tensors call, then the ATen operator, timed here alone as well.
mse_aten_us = us["mse_loss, ATen op alone"]
mse_aten_tolls = mse_aten_us / toll_us
mse_python_us = us["mse_loss"] - mse_aten_us
# The forward in the page's three parts: four tolls, the kernels' work beyond them, the rest.
tolls_share_pct = 100 * 4 * toll_us / forward_us
rest_share_pct = 100 - kernels_share_pct
# One Adam step: at least one toll per call, by the page's cost rule.
adam_tolls_us = n_adam_calls * toll_us
adam_vs_forward_pct = 100 * adam_tolls_us / forward_us
# relu's loop keeps up with a copy only with hand-written vectors: x86's AVX2 and AVX512 builds,
# or NEON on ARM; with capability DEFAULT on x86 its generic loop is slower than the bytes.
capability = torch.backends.cpu.get_cpu_capability()
vector_loops = capability in ("AVX2", "AVX512") or platform.machine().lower() in ("aarch64", "arm64")
relu_kib = 2 * 1024 * 64 * 4 / 2**10  # read once, written once
layer1_gflops = 2 * 1024 * 8 * 64 / (us["addmm, layer 1"] * 1e3)
layer1_us, relu_us, layer2_us, mse_us = (kernel_us[n] for n in KERNELS)
layer1_tolls, relu_tolls, layer2_tolls, mse_tolls = (in_tolls[n] for n in KERNELS)
fewest_tolls, most_tolls = min(in_tolls.values()), max(in_tolls.values())

with torch.no_grad(), profiler_legacy.profile() as prof:
    torch.relu(pre_relu)
relu_calls = ", ".join(e.name for e in prof.function_events if e.cpu_parent is not None)
with torch.no_grad(), profiler_legacy.profile() as prof:
    loss_fn(pred, y)
mse_inner = [e.name for e in prof.function_events if e.cpu_parent is not None]
mse_calls = len(mse_inner)

# The columns of x that Figure 1's target reads: stride 8, so the scalar loop.
c0, c1 = x[:, :1], x[:, 1:2]
d0, d1 = c0.contiguous(), c1.contiguous()
col_best = {"columns": float("inf"), "contiguous": float("inf")}
for _ in range(9):
    for name, (p, q) in {"columns": (c0, c1), "contiguous": (d0, d1)}.items():
        t0 = time.thread_time_ns()
        for _ in range(200):
            p * q
        col_best[name] = min(col_best[name], (time.thread_time_ns() - t0) / 200 / 1e3)
column_stride = c0.stride()[0]
columns_us, contiguous_us = col_best["columns"], col_best["contiguous"]
columns_extra_us = columns_us - contiguous_us


# Threads, with two allowed (Linux: per-thread CPU time from /proc).
def thread_cpu_ns():
    times = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as f:
                times[tid] = int(f.read().split()[0])
        except FileNotFoundError:
            continue
    return times


proc_threads = os.path.exists(f"/proc/self/task/{os.getpid()}/schedstat")


def threads_woken(fn):
    """Threads whose CPU time grew by at least a quarter of the busiest one's during 0.1 s of calls."""
    torch.set_num_threads(2)
    fn()
    time.sleep(0.05)  # let idle OpenMP workers stop spinning from earlier work
    before = thread_cpu_ns()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.1:
        for _ in range(10):
            fn()
    grown = [t - before.get(tid, 0) for tid, t in thread_cpu_ns().items()]
    return sum(g >= 0.25 * max(grown) for g in grown)


with torch.no_grad():
    relu_threads = threads_woken(KERNELS["relu"]) if proc_threads else -1
    mse_threads = threads_woken(KERNELS["mse_loss"]) if proc_threads else -1
torch.set_num_threads(1)

# Which library multiplies: MKL's own log, in a second process.
mkl_build = torch.backends.mkl.is_available()
CHILD = """
import os, torch
from torch import nn
from torch.autograd import profiler_legacy
torch.set_num_threads(1)
lin1, lin2 = nn.Linear(8, 64), nn.Linear(64, 1)
x = torch.randn(1024, 8)
h = torch.relu(lin1(x))
os.write(1, b"=== layer 1\\n")
lin1(x)
os.write(1, b"=== layer 2\\n")
lin2(h)
os.write(1, b"=== end\\n")
"""
logged = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True,
                        env={**os.environ, "MKL_VERBOSE": "1"}).stdout
layers_logged = {}
for part in logged.split("=== ")[1:3]:
    title, _, lines = part.partition("\n")
    calls = re.findall(r"^MKL_VERBOSE ([A-Z]+)\(", lines, re.M)
    layers_logged[title] = calls[0] if calls else "none"
layers_in_mkl = all(v == "SGEMM" for v in layers_logged.values())
layer1_logged = layers_logged.get("layer 1", "none")

# Accuracy of the mean: the loss against float64, on random batches of Figure 1's size.
float32_rounding = 2.0 ** -24
errors = []
for seed in range(20):
    g = torch.Generator().manual_seed(seed)
    p, t = torch.randn(1024, 1, generator=g), torch.randn(1024, 1, generator=g)
    exact = ((p.double() - t.double()) ** 2).mean().item()
    errors.append(abs(loss_fn(p, t).item() - exact) / exact)
mean_err_roundings = max(errors) / float32_rounding

print(f"Figure 1's forward calls: {forward_ops} (plus views: t, detach)")
print(f"one Adam step calls {n_adam_calls} ATen operators; the largest tensor among them has {adam_max_numel} elements")
print(f"each kernel alone, Figure 1's tensors, 1 thread, min of 9 x 200 calls (toll: a 1-element add "
      f"into a given output, timed among them: {toll_us:.2f} µs)")
for name, t in kernel_us.items():
    print(f"  {name:<16}{t:>8.2f} µs  {in_tolls[name]:>5.1f} tolls")
print(f"  {'whole forward':<16}{forward_us:>8.2f} µs  (the four kernels: {kernels_share:.0%} of it)")
print(f"  mse_loss as the ATen operator alone (torch._C._nn.mse_loss): {mse_aten_us:.2f} µs, "
      f"{mse_aten_tolls:.1f} tolls; the module's Python around it: {mse_python_us:.2f} µs")
print(f"the forward: four tolls {tolls_share_pct:.0f}%, the four kernels {kernels_share_pct:.0f}%, "
      f"the rest (modules' Python, transposes) {rest_share_pct:.0f}%")
print(f"one Adam step: {n_adam_calls} calls, at least {adam_tolls_us:.1f} µs of tolls "
      f"({adam_vs_forward_pct:.0f}% of the forward)")
print(f"whole forward on a batch of 2,048: {us['forward, batch 2,048']:.2f} µs, {double_batch_ratio:.2f}x the "
      f"1,024 batch's: {fixed_share_pct:.0f}% of the forward's time does not grow with the batch")
print(f"relu: predicted {relu_predicted_us:.2f} µs (a clone of a tensor of the same shape, in cache: the same "
      f"8 bytes per element, toll and allocation), measured {us['relu']:.2f} ({relu_over_predicted:.2f}x)")
print(f"aten::relu calls {relu_calls}; aten::mse_loss calls {mse_calls} operators: {', '.join(mse_inner)}")
print(f"layer 1: 2 x 1024 x 8 x 64 = {2 * 1024 * 8 * 64:,} FLOP at {layer1_gflops:.0f} GFLOP/s")
print(f"x[:, :1] * x[:, 1:2] (stride {column_stride}): {columns_us:.2f} µs; on contiguous copies "
      f"{contiguous_us:.2f} µs")
print(f"threads woken with two allowed: relu (65,536 elements) {relu_threads}, mse_loss (1,024) {mse_threads}")
print(f"MKL_VERBOSE: " + "; ".join(f"{k} -> {v}" for k, v in layers_logged.items()))
print(f"mse_loss against float64, 20 batches: at most {mean_err_roundings:.2f} float32 roundings")

fig, ax = plt.subplots(figsize=(8, 3.6))
rows = ["whole forward"] + list(KERNELS)[::-1]  # drawn bottom up: the forward's order, top down
values = [forward_us] + [kernel_us[n] for n in rows[1:]]
ax.barh(range(len(rows)), values, color=["C7"] + ["C0"] * len(KERNELS), height=0.6)
ax.axvline(toll_us, color="C3", ls=":", lw=1.2)
ax.annotate("one toll", (toll_us, len(rows) - 0.5), textcoords="offset points", xytext=(3, 2), fontsize=8,
            color="C3")
ax.plot([relu_predicted_us], [rows.index("relu")], "k|", ms=16, mew=2, label="relu, predicted: a clone of its bytes")
for i, v in enumerate(values):
    ax.text(v, i, f" {v:.1f} µs", va="center", fontsize=8)
ax.set_yticks(range(len(rows)), rows, fontsize=9)
ax.set_xlim(0, max(values) * 1.18)
ax.set_xlabel("time per call on Figure 1's tensors, one thread (µs)")
ax.legend(frameon=False, loc="upper right", bbox_to_anchor=(1.0, -0.2), fontsize=8)
ax.set_title("Figure 1's forward pass, kernel by kernel")
fig.tight_layout()
plt.show()

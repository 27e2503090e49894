"""optimizer.step() has three implementations of Adam; on a CPU the default is the for-loop, and fused is the fastest.

torch/optim/adam.py holds three versions of the same update: _single_tensor_adam (a Python
for-loop over the parameters, a few operators each), _multi_tensor_adam (foreach=True: one
torch._foreach_* operator per stage, over the whole list) and _fused_adam (fused=True: one
torch._fused_adam_ call). native_functions.yaml (the copy under torchgen/packaged/) says what
each reaches on the CPU: the _foreach_ operators have no CPU entry there, only a
CompositeExplicitAutograd "slow" kernel, while _fused_adam_ has a CPU kernel of its own. Which one Adam(params) picks when you name none is decided by
_default_to_fused_or_foreach (torch/optim/optimizer.py), from the parameters' device. The
script reads the choice off the operators a TorchDispatchMode sees in one step
(torch.utils._python_dispatch, an underscore module documented for extending PyTorch), and
shows with torch.profiler that on the CPU one _foreach_ operator still runs one operator per
tensor underneath.

Then it times one step of each, on one intra-op thread, for 4 to 256 parameter tensors of 1,024
floats each, and for 4 tensors of 262,144: the CPU time of the calling thread
(time.thread_time_ns), a batch of 20 steps (4 for the two largest cases), the three implementations interleaved in a rotating
order within each of 7 rounds; each number is the lowest batch mean over the rounds (other
programs only add time). All three start from the same parameters and gradients, and the
parameters they reach after the timed steps are compared, case by case.

For the 4 big tensors it predicts each time from the bytes moved: an in-place add, a.add_(b),
timed in the same rounds, gives this machine's speed for one pass. It reads 8 tensors of the same
size and adds them into 8 others, 16 MiB in all, as many bytes as the fused step's parameters,
gradients and two averages hold, so that the yardstick and Adam use the same level of the memory
hierarchy: 2 passes read and 1 written per pair, and the written tensor was just read, as in
Adam's in-place updates (a plain copy would also read its destination before writing it, a
traffic Adam's in-place writes do not pay, and so would overstate a pass). Where the last-level
cache holds 16 MiB that is the cache's speed, not main memory's (the size is read from /sys/devices/system/cpu/cpu0/cache, where Linux has it,
and printed; 0 where it is not known). And
each implementation's passes over a tensor's worth of memory are counted from its code
(_single_tensor_adam: lerp_ reads 2 and writes 1, mul_ 1 and 1, addcmul_ 3 and 1, sqrt 1 and 1,
the division 1 and 1, add_ 1 and 1, addcdiv_ 3 and 1: 19 passes; the fused kernel reads the
parameter, its gradient and both averages and writes three of them back: 7 passes). The
prediction holds where the kernels are vectorised: on x86, torch.backends.cpu.get_cpu_capability()
is read, and with none (DEFAULT) the arithmetic, not the memory, sets the time; on arm64 ATen's
vector type is NEON in every build, whatever that function reports.
"""
import contextlib
import importlib.util
import os
import platform
import re
import sys
import time
from collections import Counter

import matplotlib.pyplot as plt
import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring


@contextlib.contextmanager
def profiler_lines_hidden():
    """While the profiler records: its C++ side (Kineto) writes a line with the date and the
    process id to the standard error at every start and stop, which would differ on every run;
    those lines go to os.devnull, and the standard error comes back as it was."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


torch.set_num_threads(1)
KINDS = {"for-loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
COUNTS = [4, 16, 64, 256]
NUMEL = 1024
BIG = 1 << 18
ROUNDS = 7


class Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "aten":
            self.names[func.__name__.split(".")[0]] += 1
        return func(*args, **(kwargs or {}))


def make(n_tensors, numel, **options):
    """An Adam over n parameter tensors with gradients, after one step (so its state exists)."""
    g = torch.Generator().manual_seed(n_tensors)
    params = [torch.randn(numel, generator=g).requires_grad_() for _ in range(n_tensors)]
    for p in params:
        p.grad = torch.randn(numel, generator=g)
    optimizer = torch.optim.Adam(params, lr=1e-3, **options)
    optimizer.step()
    return params, optimizer


# Which implementation runs by default on the CPU, read off the operators of one step.
_, default_opt = make(4, NUMEL)
with Ops() as seen:
    default_opt.step()
default_ops = seen.names
default_is_for_loop = not any(n.startswith("_foreach") or n.startswith("_fused") for n in default_ops)
ops_per_step = {}
foreach_kernels = {}  # n -> the number of _foreach_ operators in one foreach step
foreach_fixed = {}    # n -> the operators of one foreach step other than the step counters' reads
for kind, options in KINDS.items():
    for n in (4, 64):
        _, opt = make(n, NUMEL, **options)
        with Ops() as seen:
            opt.step()
        ops_per_step[kind, n] = sum(seen.names.values())
        if kind == "foreach":
            foreach_kernels[n] = sum(k for name, k in seen.names.items() if name.startswith("_foreach"))
            foreach_fixed[n] = sum(k for name, k in seen.names.items() if name != "_local_scalar_dense")
            foreach_reads_per_tensor = seen.names["_local_scalar_dense"] // n
            foreach_lift_fresh = seen.names["lift_fresh"]
        if kind == "fused":
            fused_op_names = ", ".join(sorted(seen.names))
        if n == 4:
            print(f"{kind:>8}, 4 tensors: {dict(seen.names)}")
loop_ops_4, loop_ops_64 = ops_per_step["for-loop", 4], ops_per_step["for-loop", 64]
foreach_ops_4, foreach_ops_64 = ops_per_step["foreach", 4], ops_per_step["foreach", 64]
fused_ops_4, fused_ops_64 = ops_per_step["fused", 4], ops_per_step["fused", 64]
fused_op_seen = ops_per_step["fused", 4] <= 3
loop_ops_grow = ops_per_step["for-loop", 64] == 16 * ops_per_step["for-loop", 4]
foreach_ops_flat = foreach_kernels[64] == foreach_kernels[4] and foreach_fixed[64] == foreach_fixed[4]
foreach_foreach_ops = foreach_kernels[4]
foreach_fixed_ops = foreach_fixed[4]

# On the CPU a _foreach_ operator is a loop in C++: the profiler sees one operator per tensor under it.
_, opt = make(4, NUMEL, foreach=True)
with profiler_lines_hidden(), profile(activities=[ProfilerActivity.CPU]) as prof:
    opt.step()
under_foreach = Counter(e.name for e in prof.events()
                        if e.cpu_parent is not None and e.cpu_parent.name == "aten::_foreach_sqrt")
sqrt_per_tensor_under_foreach = under_foreach.get("aten::sqrt", 0) == 4

# What native_functions.yaml (shipped under torchgen/packaged/) dispatches them to on the CPU.
spec = importlib.util.find_spec("torchgen")
if spec is None:
    raise RuntimeError("torchgen is not installed beside torch: no native_functions.yaml to read")
YAML = os.path.join(os.path.dirname(spec.origin), "packaged", "ATen", "native", "native_functions.yaml")
YAML_TEXT = open(YAML, encoding="utf-8").read()


def dispatch_of(op):
    """{dispatch key: kernel} of the native_functions.yaml entry whose schema starts `op(`."""
    block = re.search(rf"^- func: {re.escape(op)}\(.*?(?=^- func:)", YAML_TEXT, re.MULTILINE | re.DOTALL)
    if block is None:
        raise RuntimeError(f"{op} not found in {YAML}")
    table = re.search(r"^  dispatch:\n((?:    .*\n)+)", block.group(0), re.MULTILINE)
    pairs = re.findall(r"^    ([\w, ]+):\s*(\w+)", table.group(1), re.MULTILINE)
    return {key.strip(): kernel for keys, kernel in pairs for key in keys.split(",")}


def cpu_kernel(op):
    """The kernel a CPU tensor reaches for op: its CPU entry, else the composite one."""
    dispatch = dispatch_of(op)
    return dispatch.get("CPU") or dispatch["CompositeExplicitAutograd"]


foreach_sqrt_cpu_kernel = cpu_kernel("_foreach_sqrt")
fused_adam_cpu_kernel = cpu_kernel("_fused_adam_")
foreach_has_cpu_kernel = "CPU" in dispatch_of("_foreach_sqrt")
foreach_cpu_is_slow_path = foreach_sqrt_cpu_kernel.endswith("_slow") and not foreach_has_cpu_kernel

# Timing: rounds of interleaved batches, lowest batch mean.
cases = [(n, NUMEL) for n in COUNTS] + [(4, BIG)]
setups = {(case, kind): make(*case, **options) for case in cases for kind, options in KINDS.items()}
COPY_TENSORS = 8                                  # 8 added into 8: 16 MiB, the fused step's working set
copy_src = [torch.randn(BIG) for _ in range(COPY_TENSORS)]
copy_dst = [torch.zeros(BIG) for _ in range(COPY_TENSORS)]


def plain_copy():
    """The yardstick: an in-place add of each source into its destination (2 reads, 1 write)."""
    for src, dst in zip(copy_src, copy_dst):
        dst.add_(src)


best = {key: float("inf") for key in setups}
best_copy_us = float("inf")
for r in range(ROUNDS):
    for case in cases:
        order = list(KINDS)[r % 3:] + list(KINDS)[:r % 3]
        steps = 20 if case[0] * case[1] <= 64 * NUMEL else 4
        for kind in order:
            opt = setups[case, kind][1]
            opt.step()  # untimed
            t0 = time.thread_time_ns()
            for _ in range(steps):
                opt.step()
            best[case, kind] = min(best[case, kind], (time.thread_time_ns() - t0) / steps / 1e3)
        if case == (4, BIG):
            plain_copy()  # untimed
            t0 = time.thread_time_ns()
            for _ in range(steps):
                plain_copy()
            best_copy_us = min(best_copy_us, (time.thread_time_ns() - t0) / steps / 1e3)

# Same start, same steps: do they agree, in every case?
final = {(case, kind): torch.cat([p.detach() for p in setups[case, kind][0]]) for case in cases for kind in KINDS}
loop_equals_foreach = all(torch.equal(final[case, "for-loop"], final[case, "foreach"]) for case in cases)
fused_max_diff = max(float((final[case, "fused"] - final[case, "for-loop"]).abs().max()) for case in cases)
fused_agrees = fused_max_diff < 1e-5

# Bytes over bandwidth, for the 4 big tensors.
cpu_capability = torch.backends.cpu.get_cpu_capability()
arm64 = platform.machine().lower() in ("arm64", "aarch64")
vector_kernels = cpu_capability != "DEFAULT" or arm64


def last_level_cache_mib():
    """The largest cache of CPU 0 that Linux's sysfs lists, in MiB (0 where it lists none)."""
    sizes = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in (os.listdir(base) if os.path.isdir(base) else []):
        try:
            text = open(os.path.join(base, entry, "size")).read().strip()
        except OSError:
            continue
        number = int(re.match(r"\d+", text).group(0))
        sizes.append(number * {"K": 1 / 1024, "M": 1, "G": 1024}.get(text[-1], 1 / 1024 ** 2))
    return int(max(sizes, default=0))


last_cache_mib = last_level_cache_mib()
WORKING_SET_MIB = 16
memory_level = ("its last-level cache" if last_cache_mib >= 2 * WORKING_SET_MIB else
                "main memory" if 0 < last_cache_mib < WORKING_SET_MIB else
                "its last-level cache or main memory")
pass_bytes = 4 * BIG * 4                         # one pass over the 4 tensors' worth of float32
copy_passes = 3 * COPY_TENSORS // 4              # the add reads 2 such passes (a and b) and writes 1
seconds_per_pass = best_copy_us / copy_passes
LOOP_PASSES, FUSED_PASSES = 19, 7
predicted_loop_big_us = LOOP_PASSES * seconds_per_pass
predicted_fused_big_us = FUSED_PASSES * seconds_per_pass
copy_gb_per_s = copy_passes * pass_bytes / (best_copy_us * 1e-6) / 1e9
loop_big_us = best[(4, BIG), "for-loop"]
fused_big_us = best[(4, BIG), "fused"]
loop_big_over_predicted = loop_big_us / predicted_loop_big_us
fused_big_over_predicted = fused_big_us / predicted_fused_big_us
passes_ratio = LOOP_PASSES / FUSED_PASSES          # what the bytes predict for for-loop / fused

us = {kind: [best[(n, NUMEL), kind] for n in COUNTS] for kind in KINDS}
figure_1_loop_us = best[(4, NUMEL), "for-loop"]
fused_vs_loop_few = best[(4, NUMEL), "for-loop"] / best[(4, NUMEL), "fused"]
fused_vs_loop_many = best[(256, NUMEL), "for-loop"] / best[(256, NUMEL), "fused"]
foreach_vs_loop_many = best[(256, NUMEL), "for-loop"] / best[(256, NUMEL), "foreach"]
fused_vs_foreach_many = best[(256, NUMEL), "foreach"] / best[(256, NUMEL), "fused"]
fused_vs_loop_big = best[(4, BIG), "for-loop"] / best[(4, BIG), "fused"]
foreach_vs_loop_big = best[(4, BIG), "for-loop"] / best[(4, BIG), "foreach"]
foreach_vs_loop_few = best[(4, NUMEL), "for-loop"] / best[(4, NUMEL), "foreach"]
fused_vs_foreach_big = best[(4, BIG), "foreach"] / best[(4, BIG), "fused"]
loop_us_per_tensor = (best[(256, NUMEL), "for-loop"] - best[(4, NUMEL), "for-loop"]) / 252
fused_us_per_tensor = (best[(256, NUMEL), "fused"] - best[(4, NUMEL), "fused"]) / 252
fused_fastest_everywhere = all(best[c, "fused"] < min(best[c, "for-loop"], best[c, "foreach"]) for c in cases)

print(f"default on the CPU: the for-loop ({default_is_for_loop}); its operators: {dict(default_ops)}")
print(f"aten operators per step, 4 / 64 tensors: " + ", ".join(
    f"{k} {ops_per_step[k, 4]} / {ops_per_step[k, 64]}" for k in KINDS))
print(f"under one aten::_foreach_sqrt over 4 tensors the profiler saw: {dict(under_foreach)}")
print(f"native_functions.yaml: _foreach_sqrt on the CPU -> {foreach_sqrt_cpu_kernel} (no CPU entry: "
      f"{not foreach_has_cpu_kernel}); _fused_adam_ -> {fused_adam_cpu_kernel}")
print(f"\nµs per step (thread CPU time, lowest batch mean over {ROUNDS} rounds), one thread")
print(f"{'tensors x floats':>18}" + "".join(f"{k:>11}" for k in KINDS))
for case in cases:
    print(f"{case[0]:>7} x {case[1]:>8,}" + "".join(f"{best[case, k]:>11.1f}" for k in KINDS))
print(f"fused vs for-loop: {fused_vs_loop_few:.1f}x at 4 tensors, {fused_vs_loop_many:.1f}x at 256, "
      f"{fused_vs_loop_big:.1f}x at 4 x {BIG:,}; foreach vs for-loop: {foreach_vs_loop_few:.2f}x at 4 tensors, "
      f"{foreach_vs_loop_many:.2f}x at 256, {foreach_vs_loop_big:.2f}x at 4 x {BIG:,}")
print(f"after the same steps, in every case: for-loop == foreach bit for bit: {loop_equals_foreach}; "
      f"fused differs by at most {fused_max_diff:.1e}")
print(f"\n4 x {BIG:,} floats, bytes over bandwidth (kernels: {cpu_capability}): an in-place add of "
      f"{COPY_TENSORS} such tensors into {COPY_TENSORS} others ({WORKING_SET_MIB} MiB) took "
      f"{best_copy_us:.0f} µs ({copy_gb_per_s:.1f} GB/s read + written); sysfs lists a last-level cache of "
      f"{last_cache_mib} MiB, so the bytes should come from {memory_level}")
print(f"  for-loop, {LOOP_PASSES} passes: predicted {predicted_loop_big_us:.0f} µs, measured {loop_big_us:.0f} µs "
      f"({loop_big_over_predicted:.2f}x)")
print(f"  fused, {FUSED_PASSES} passes: predicted {predicted_fused_big_us:.0f} µs, measured {fused_big_us:.0f} µs "
      f"({fused_big_over_predicted:.2f}x)")
print(f"  for-loop / fused: {fused_vs_loop_big:.2f}x measured, {passes_ratio:.2f}x predicted by the passes")

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
for i, kind in enumerate(KINDS):
    left.loglog(COUNTS, us[kind], "o-", color=f"C{i}", label=kind, base=2)
    left.plot([4], [best[(4, BIG), kind] / 16], marker="*", color=f"C{i}", markersize=10, linestyle="")
left.plot([4], [predicted_loop_big_us / 16], marker="_", color="C0", markersize=14, linestyle="")
left.plot([4], [predicted_fused_big_us / 16], marker="_", color="C2", markersize=14, linestyle="")
left.set_xlabel("parameter tensors (1,024 floats each)")
left.set_ylabel("µs per optimizer.step()")
left.set_title("Time per step\n★: 4 tensors of 262,144 floats, time ÷ 16\n–: what their bytes predict", fontsize=9)
left.legend(fontsize=8)
right.bar(range(3), [ops_per_step[k, 64] for k in KINDS], color=["C0", "C1", "C2"])
for i, k in enumerate(KINDS):
    right.text(i, ops_per_step[k, 64], str(ops_per_step[k, 64]), ha="center", va="bottom", fontsize=9)
right.set_xticks(range(3), list(KINDS))
right.set_ylabel("aten operators dispatched per step")
right.set_title("Operators per step, 64 tensors", fontsize=10)
fig.suptitle("Adam's three implementations on a CPU")
plt.show()

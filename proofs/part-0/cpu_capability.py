"""The same torch call runs a different compiled kernel depending on the CPU's vector units.

ATen compiles its CPU kernels several times (DEFAULT, AVX2, AVX512 on x86) and DispatchStub
(aten/src/ATen/native/DispatchStub.cpp) picks one at run time. The environment variable
ATEN_CPU_CAPABILITY overrides that pick. On x86 it is honoured without a hardware check, so
asking for a level above what the CPU has would run instructions it lacks: this script only asks
for levels up to torch's own pick. Each setting runs in its own fresh Python process, on one
thread: four operators on 64K float32 values (small enough to stay in a core's cache, so the
kernel's arithmetic shows), 15 rounds of 20 calls after a warm-up, taking turns with a
plain-Python loop, each timed as the CPU time of the calling thread (time.thread_time_ns); times
are minima, and each comparison between processes uses the median ratio of an operator's time to
that loop's, so that a busier moment in one process cancels. On an AVX512 CPU, most kernels have
no AVX512 build (their slot is empty) and run their AVX2 one, so asking for AVX2 runs the same
loop for them (its time can still move by a fifth or so either way: other code on the call's path
is built per level too); sigmoid has an AVX512 build (on AMD's Zen 4, which runs AVX512 as two
256-bit halves, that build need not be faster: the page guards that claim by intel_cpu). The
DEFAULT maximum is a scalar loop with a branch; on random operands it mispredicts, so the proof
also times maximum where the same operand always wins, which isolates the vector unit's share. A last process sets the variable only after `import torch` and times
torch.maximum: the variable is read at the first call that needs it, not at import, so that
process runs the DEFAULT kernel.
"""
import json
import os
import platform
import subprocess
import sys

import matplotlib.pyplot as plt

# Runs inside each child process; prints one JSON line with times in µs.
CHILD = r"""
import json, os, statistics, time
late = os.environ.pop("SET_AFTER_IMPORT", None)
import torch
if late:
    os.environ["ATEN_CPU_CAPABILITY"] = late   # after the import, before any kernel ran

torch.set_num_threads(1)  # one core: compare kernels, not thread pools
torch.manual_seed(0)
x = torch.rand(1 << 16)
y = torch.rand(1 << 16)
y_above = x + 1   # the same winner every time: a branchy scalar loop predicts it perfectly
ops = {
    "reference": lambda: sum(range(3000)),   # plain Python: the same work in every process
    "maximum": lambda: torch.maximum(x, y),
    "maximum_predictable": lambda: torch.maximum(x, y_above),
    "sigmoid": lambda: torch.sigmoid(x),
    "clamp": lambda: x.clamp(0.2, 0.8),
    "sum": lambda: x.sum(),
}
rounds = {name: [] for name in ops}
for fn in ops.values():
    fn()  # warm-up
for _ in range(15):
    for name, fn in ops.items():
        t0 = time.thread_time_ns()
        for _ in range(20):
            fn()
        rounds[name].append((time.thread_time_ns() - t0) / 20 / 1e3)
us = {name: min(t) for name, t in rounds.items() if name != "reference"}
# each op's time in units of the reference timed beside it: a busy moment cancels out
rel = {name: statistics.median(t / r for t, r in zip(rounds[name], rounds["reference"]))
       for name in us}
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "us": us, "rel": rel}))
"""

x86_64 = platform.machine().lower() in ("x86_64", "amd64")
X86_LEVELS = ["default", "avx2", "avx512"]  # the values ATEN_CPU_CAPABILITY takes on x86


def run_child(request=None, after_import=None):
    """Run CHILD in a fresh interpreter with ATEN_CPU_CAPABILITY=request (None: unset), or with
    the variable set inside the child after `import torch`."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if request is not None:
        env["ATEN_CPU_CAPABILITY"] = request
    if after_import is not None:
        env["SET_AFTER_IMPORT"] = after_import
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


own = run_child()  # torch's own pick for this CPU
cpu_capability = own["capability"]
vector_pick = cpu_capability != "DEFAULT"           # torch picked vector code here
pick_is_avx512 = cpu_capability == "AVX512"
# AMD's Zen 4 runs AVX512 as two 256-bit halves, so an AVX512 loop need not beat an AVX2 one
# there: the page's AVX2-against-AVX512 claim is guarded by an Intel processor.
try:
    with open("/proc/cpuinfo") as f:
        intel_cpu = "GenuineIntel" in f.read()
except OSError:
    intel_cpu = False
if x86_64 and cpu_capability.lower() in X86_LEVELS:
    REQUESTS = X86_LEVELS[:X86_LEVELS.index(cpu_capability.lower())]  # up to the pick, never above
else:
    REQUESTS = ["default"] if vector_pick else []   # "default" exists on every platform
runs = {request: run_child(request) for request in REQUESTS}
runs[f"unset ({cpu_capability})"] = own
late = run_child(after_import="default")
OPS = list(own["us"])



def slower(run, op, than=own):
    """How many times slower `op` ran in `run` than in `than`, each time measured in units of the
    Python reference timed beside it in its own process (so a busier moment in one cancels)."""
    return run["rel"][op] / than["rel"][op]


baseline = runs["default"] if "default" in runs else own
maximum_speedup = slower(baseline, "maximum")
sigmoid_speedup = slower(baseline, "sigmoid")
# On random operands the plain loop's branch mispredicts half the time; on operands where the
# same one always wins it does not: the part of the gap that is the vector unit's alone.
maximum_predictable_speedup = slower(baseline, "maximum_predictable")
late_vs_own = slower(late, "maximum")          # about maximum_speedup if the late setting took effect
late_capability = late["capability"]
if pick_is_avx512:  # AVX2 against the AVX512 pick: about 1 where the AVX512 slot is empty
    maximum_avx2_over_avx512 = slower(runs["avx2"], "maximum")
    sigmoid_avx2_over_avx512 = slower(runs["avx2"], "sigmoid")
else:
    maximum_avx2_over_avx512 = sigmoid_avx2_over_avx512 = float("nan")

print(f"machine: {platform.machine()}; torch's own pick: {cpu_capability}; one process per "
      "setting, 1 thread, 64K float32, min of 15 runs of 20 calls, times in µs")
print(f"{'op':<9}" + "".join(f"{label:>18}" for label in runs) + f"{'DEFAULT/own':>13}")
for op in OPS:
    cells = "".join(f"{run['us'][op]:>18.1f}" for run in runs.values())
    print(f"{op:<9}{cells}{slower(baseline, op):>12.1f}x")
if pick_is_avx512:
    print(f"AVX2 over AVX512: maximum {maximum_avx2_over_avx512:.2f}x (no AVX512 build: its AVX2 loop "
          f"runs either way; other code on the path is built per level), sigmoid {sigmoid_avx2_over_avx512:.2f}x (it has one)")
print(f"ATEN_CPU_CAPABILITY=default set after `import torch`: maximum took {late['us']['maximum']:.1f} µs, "
      f"{late_vs_own:.0f}x slower than torch's own pick; get_cpu_capability() -> {late_capability}")
print(f"maximum on operands where the same one always wins (no mispredicted branches): "
      f"{maximum_predictable_speedup:.1f}x slower at DEFAULT, against {maximum_speedup:.1f}x on random operands; "
      f"Intel processor: {intel_cpu}")
print("(ratios: each time in units of a plain-Python loop timed beside it in the same process)")

fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
width = 0.8 / len(runs)
for k, (label, run) in enumerate(runs.items()):
    ax.bar([i + (k - (len(runs) - 1) / 2) * width for i in range(len(OPS))],
           [run["us"][op] for op in OPS], width, label=f"ATEN_CPU_CAPABILITY={label}", color=f"C{k}")
LABELS = {"clamp": "x.clamp", "maximum_predictable": "torch.maximum\n(same winner)"}
ax.set_xticks(range(len(OPS)), [LABELS.get(op, f"torch.{op}") for op in OPS])
ax.set_yscale("log")
ax.set_ylabel("µs per call (log scale)")
ax.legend(fontsize=8, frameon=False)
ax.set_title(f"One call, several compiled kernels: 64K float32 on one core ({platform.machine()})",
             fontsize=10)
plt.show()

"""Does torch.compile pay for itself on Figure 1's loop? A cold compile, a warm one, and the steady step against fused Adam.

Runs Figure 1's training loop in fresh Python processes started by this script, so that each
one pays what a new program pays, compiled as the official recipes do it: `loss_fn(model(x), y)`
under torch.compile (the default backend, Inductor; backward is compiled with it, by
AOTAutograd), and `optimizer.step()` inside a function of its own under
torch.compile(fullgraph=False), as the "Compiling the optimizer" recipe does. Every compile
here says dynamic=False, so that a new width is compiled for its own sizes.

  cold  with an empty Inductor cache folder (TORCHINDUCTOR_CACHE_DIR, set before
        torch._inductor is imported): Inductor first probes the C++ compiler for the vector
        instructions it may use (the private torch._inductor.cpu_vec_isa.pick_vec_isa, timed on
        its own), then the first step traces, partitions, writes C++ and compiles it;
  warm  a second process with the same folder, now filled: Inductor finds the compiled graphs
        in its on-disk caches. This process then also compiles the forward pass and loss of the
        same network with a hidden layer of width 1024 (new graphs: the C++ compiler runs again;
        at that width the optimizer's share of the step is small, so it stays uncompiled).

Both use TORCHINDUCTOR_COMPILE_THREADS=1 (kernels compiled one after another in the process)
and one intra-op thread, so everything runs on one core. The variables that switch the caches
off (TORCHINDUCTOR_FORCE_DISABLE_CACHES, TORCHINDUCTOR_FX_GRAPH_CACHE,
TORCHINDUCTOR_AUTOGRAD_CACHE) and TORCHINDUCTOR_CPP_WRAPPER are removed from the processes'
environment, so the caches and the Python wrapper are as they are by default. The first 30
steps are timed one by one (wall time, time.perf_counter: a compile waits for the C++ compiler,
a separate process); the cold process also runs the loop uncompiled for 30 steps. The CPU time
of the processes' children during those steps (getrusage RUSAGE_CHILDREN) is the C++
compiler's; the caches' own counters (the private torch._dynamo.utils.counters) say what they
found. For the steady speed, rounds interleave eager (Adam's default, the for-loop), eager with
Adam(fused=True), the forward and loss compiled, and the whole recipe (batches of 25 steps in
20 rounds; for the wide model, 8 steps in 9 rounds), timed by the CPU time of the calling thread (time.thread_time_ns: on one thread it
holds all the work), with Python's garbage collector paused during each batch (as timeit does), after gc.freeze():
compiling leaves the process with hundreds of thousands of Python objects, and freezing them
keeps every later collection from walking them all (a pass over them landing in a batch would be
timed as its steps). Each one's lowest batch is kept (other programs only add time). One more step of each is run under sys.setprofile (Python
calls inside torch's .py files) and under torch.profiler (aten:: events: every call the
dispatcher made, nested ones included).

The compiled loop pays for itself after n steps when its total time (probe and compile
included) falls below the uncompiled loop's: with a steady saving of s per step that is about
(probe + first compiled step - first eager step) / s. If the machine has no C++ compiler the
script raises, naming what is missing.
"""
import json
import os
import subprocess
import sys
import tempfile

FIRST_STEPS = 30
STEADY_ROUNDS, STEADY_STEPS = 20, 25   # the wide model: 9 rounds of 8 steps

CHILD = r'''
import gc, json, os, resource, sys, time
os.environ["TORCHINDUCTOR_CACHE_DIR"] = sys.argv[2]
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
for name in ("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCHINDUCTOR_FX_GRAPH_CACHE",
             "TORCHINDUCTOR_AUTOGRAD_CACHE", "TORCHINDUCTOR_CPP_WRAPPER"):
    os.environ.pop(name, None)   # the caches on and the Python wrapper, as by default
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile
torch.set_num_threads(1)
import torch._inductor.config as inductor_config, torch._inductor.cpp_builder as cpp_builder
import torch._inductor.cpu_vec_isa as cpu_vec_isa
from torch._dynamo.utils import counters
from torch._inductor import exc as inductor_exc
from torch._inductor.runtime.cache_dir_utils import cache_dir
try:
    cpp_builder.get_cpp_compiler()
except inductor_exc.InvalidCxxCompiler:
    print(json.dumps({"error": "no C++ compiler ($CXX or g++)"})); sys.exit(0)
assert cache_dir() == sys.argv[2] and inductor_config.compile_threads == 1
mode, first_steps, rounds, steady_steps = sys.argv[1], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
loss_fn = nn.MSELoss()

class Program:
    """Figure 1's network, loss and Adam; the forward and loss, and the optimizer step, compiled or not."""
    def __init__(self, width=64, compile_forward=False, compile_optimizer=False, **adam):
        torch.manual_seed(1)
        model = nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 1))
        self.optimizer = optimizer = torch.optim.Adam(model.parameters(), lr=0.01, **adam)
        def forward_and_loss(a, b):
            return loss_fn(model(a), b)
        def optimizer_step():
            optimizer.step()
        self.forward = torch.compile(forward_and_loss, dynamic=False) if compile_forward else forward_and_loss
        self.optimizer_step = (torch.compile(optimizer_step, fullgraph=False, dynamic=False)
                               if compile_optimizer else optimizer_step)
    def step(self):
        loss = self.forward(x, y)
        loss.backward()
        self.optimizer_step()
        self.optimizer.zero_grad()
        return loss.item()

def python_calls(fn):
    files = {}
    def trace(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call" and name.startswith(TORCH_DIR):
            name = "torch/" + name[len(TORCH_DIR):].replace(os.sep, "/")
            files[name] = files.get(name, 0) + 1
    sys.setprofile(trace)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return files

def dispatcher_calls(fn):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.name.startswith("aten::") for e in prof.events())

def steady(programs, steps, rounds):
    """Lowest batch's µs per step for each program, and every round's, interleaved."""
    best = {k: float("inf") for k in programs}
    rounds_us = {k: [] for k in programs}
    for r in range(rounds):
        names = list(programs)[r % len(programs):] + list(programs)[:r % len(programs)]
        for k in names:
            gc.collect()  # cheap: the objects compiling left behind are frozen (below)
            gc.disable()  # as timeit does
            try:
                t0 = time.thread_time_ns()
                for _ in range(steps):
                    programs[k].step()
                us = (time.thread_time_ns() - t0) / steps / 1e3
            finally:
                gc.enable()
            best[k] = min(best[k], us)
            rounds_us[k].append(us)
    return best, rounds_us

def libraries():
    return sum(name.endswith(".so") for _, _, names in os.walk(sys.argv[2]) for name in names)

def compile_and_time(program, n):
    """First n steps of a compiled program; what the C++ compiler and the caches did meanwhile."""
    counters.clear()
    libraries_before = libraries()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    loss = program.forward(x, y)
    loss.backward()
    t1 = time.perf_counter()
    program.optimizer_step()
    program.optimizer.zero_grad()
    loss.item()
    t2 = time.perf_counter()
    times = [t2 - t0]
    for _ in range(n - 1):
        t = time.perf_counter()
        program.step()
        times.append(time.perf_counter() - t)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"first": times, "first_forward_backward_s": t1 - t0, "first_optimizer_s": t2 - t1,
            "new_libraries": libraries() - libraries_before,
            "compiler_cpu_s": (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime),
            "fx_hits": counters["inductor"]["fxgraph_cache_hit"],
            "fx_misses": counters["inductor"]["fxgraph_cache_miss"],
            "aot_hits": counters["aot_autograd"]["autograd_cache_hit"],
            "aot_misses": counters["aot_autograd"]["autograd_cache_miss"]}

out = {}
if mode == "cold":
    eager = Program()
    t = []
    for _ in range(first_steps):
        t0 = time.perf_counter()
        eager.step()
        t.append(time.perf_counter() - t0)
    out["eager_first"] = t
t0 = time.perf_counter()
cpu_vec_isa.pick_vec_isa()
out["probe_s"] = time.perf_counter() - t0
recipe = Program(compile_forward=True, compile_optimizer=True)
out["recipe"] = compile_and_time(recipe, first_steps)
if mode == "cold":
    out["python_objects"] = len(gc.get_objects())
    programs = {"eager": eager, "eager, fused Adam": Program(fused=True),
                "forward compiled": Program(compile_forward=True), "forward and optimizer compiled": recipe}
    for p in programs.values():
        p.step()
    gc.collect()
    gc.freeze()   # what compiling left behind: out of every later collection's way
    out["steady_us"], out["rounds_us"] = steady(programs, steady_steps, rounds)
    out["python_calls"] = {k: python_calls(p.step) for k, p in programs.items()}
    out["dispatcher_calls"] = {k: dispatcher_calls(p.step) for k, p in programs.items()}
    out["same_loss"] = abs(eager.step() - recipe.step()) < 1e-3
else:  # warm: the same cache, and a model wide enough for its kernels to matter
    wide = {"eager": Program(1024), "forward compiled": Program(1024, compile_forward=True)}
    t0 = time.perf_counter()
    wide["forward compiled"].step()
    out["wide_compile_s"] = time.perf_counter() - t0
    gc.collect()
    gc.freeze()
    out["wide_steady_us"], out["wide_rounds_us"] = steady(wide, 8, 9)
print(json.dumps(out))
'''


def run(mode, cache):
    result = subprocess.run([sys.executable, "-c", CHILD, mode, cache, str(FIRST_STEPS), str(STEADY_ROUNDS),
                             str(STEADY_STEPS)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"the {mode} process failed:\n{result.stderr[-3000:]}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    if "error" in data:
        raise RuntimeError(f"{data['error']}: on a CPU, torch.compile's Inductor backend compiles the "
                           "C++ it writes. Install a C++ compiler (for example `apt install g++`) or set CXX.")
    return data


cache = tempfile.mkdtemp(prefix="inductor-cache-")
cold = run("cold", cache)
warm = run("warm", cache)

# The first steps, cold and warm.
eager_first = cold["eager_first"]
eager_first_ms = eager_first[0] * 1e3
probe_cold_s, probe_warm_s = cold["probe_s"], warm["probe_s"]
cold_first_s, warm_first_s = cold["recipe"]["first"][0], warm["recipe"]["first"][0]
cold_forward_backward_s = cold["recipe"]["first_forward_backward_s"]
cold_optimizer_s = cold["recipe"]["first_optimizer_s"]
cold_total_s = probe_cold_s + cold_first_s
warm_total_s = probe_warm_s + warm_first_s
cold_vs_warm = cold_total_s / warm_total_s
cold_compiler_cpu_s = cold["recipe"]["compiler_cpu_s"]
warm_compiler_cpu_s = warm["recipe"]["compiler_cpu_s"]
cold_new_libraries = cold["recipe"]["new_libraries"]
cold_fx_misses, cold_fx_hits = cold["recipe"]["fx_misses"], cold["recipe"]["fx_hits"]
warm_fx_misses, warm_fx_hits = warm["recipe"]["fx_misses"], warm["recipe"]["fx_hits"]
warm_aot_hits = warm["recipe"]["aot_hits"]
cold_compiled_everything = cold_fx_hits == 0 and cold_fx_misses >= 3 and cold_new_libraries > 0
warm_found_everything = warm_fx_misses == 0 and warm_fx_hits == cold_fx_misses
python_objects_after_compile = cold["python_objects"]

# The steady step.
steady = cold["steady_us"]
eager_us = steady["eager"]
fused_us = steady["eager, fused Adam"]
forward_compiled_us = steady["forward compiled"]
recipe_us = steady["forward and optimizer compiled"]
fused_speedup = eager_us / fused_us
forward_compiled_speedup = eager_us / forward_compiled_us
recipe_speedup = eager_us / recipe_us
recipe_vs_fused = fused_us / recipe_us            # above 1: the compiled recipe was faster than fused Adam


def which_way(mine_us: float, theirs_us: float, than: str) -> str:
    """Words for a step time against another, the direction first: '12% longer than eager's'."""
    change = mine_us / theirs_us - 1
    if abs(change) < 0.02:
        return f"as long as {than}, within 2%"
    return f"{abs(change):.0%} {'longer' if change > 0 else 'shorter'} than {than}"


forward_compiled_words = which_way(forward_compiled_us, eager_us, "eager's")
recipe_vs_fused_words = which_way(recipe_us, fused_us, "fused Adam's")
rounds = cold["rounds_us"]
recipe_round_speedups = [e / c for e, c in zip(rounds["eager"], rounds["forward and optimizer compiled"])]
recipe_speedup_low, recipe_speedup_high = min(recipe_round_speedups), max(recipe_round_speedups)
saving_us = eager_us - recipe_us
first_extra_s = cold_total_s - eager_first[0]
break_even_steps = first_extra_s / (saving_us / 1e6) if saving_us > 0 else float("inf")
# From a warm cache the start costs the warm compile's time: the steps that repay it (never, where
# compiling saved nothing).
warm_break_even_steps = warm_total_s / (saving_us / 1e6) if saving_us > 0 else float("inf")
FIGURE_1_STEPS = 200
break_even_runs = break_even_steps / FIGURE_1_STEPS
def two_figures(n):
    """n rounded to two significant figures, written out: 1,166,045 -> '1,200,000'."""
    return f"{float(f'{n:.2g}'):,.0f}"


if saving_us <= 0:
    break_even_text = "never: its steady step was no faster than eager's"
else:
    break_even_text = (f"after about {two_figures(break_even_steps)} steps "
                       f"({two_figures(break_even_runs)} runs of Figure 1's loop)")
    if recipe_speedup_low <= 1:
        break_even_text += (f", and only if its saving is real: round by round the compiled loop ran at "
                            f"{recipe_speedup_low:.2f} to {recipe_speedup_high:.2f} times eager's speed, "
                            f"so the saving is within the noise")
fused_saving_us = eager_us - fused_us
beats_fused_by_us = fused_us - recipe_us
break_even_vs_fused_steps = (first_extra_s / (beats_fused_by_us / 1e6) if beats_fused_by_us > 0
                             else float("inf"))
break_even_vs_fused_text = (f"after about {two_figures(break_even_vs_fused_steps)} steps" if beats_fused_by_us > 0
                            else "never: it was not faster than fused Adam")
same_loss = cold["same_loss"]

# What compiling changed in one step: Python calls and dispatcher calls.
calls = cold["python_calls"]
python_calls_eager = sum(calls["eager"].values())
python_calls_forward_compiled = sum(calls["forward compiled"].values())
python_calls_recipe = sum(calls["forward and optimizer compiled"].values())
dispatcher_calls_eager = cold["dispatcher_calls"]["eager"]
dispatcher_calls_forward_compiled = cold["dispatcher_calls"]["forward compiled"]
dispatcher_calls_recipe = cold["dispatcher_calls"]["forward and optimizer compiled"]
extra_by_file = {f: n - calls["eager"].get(f, 0) for f, n in calls["forward compiled"].items()}
extra_python_files = ", ".join(f"{f} ({n})" for f, n in sorted(extra_by_file.items(), key=lambda kv: -kv[1])[:3]
                               if n > 0)
extra_python_calls = python_calls_forward_compiled - python_calls_eager

# The wide model (width 1024), compiled in the warm process.
wide_compile_s = warm["wide_compile_s"]
wide_eager_us = warm["wide_steady_us"]["eager"]
wide_compiled_us = warm["wide_steady_us"]["forward compiled"]
wide_speedup = wide_eager_us / wide_compiled_us
wide_round_speedups = [e / c for e, c in zip(warm["wide_rounds_us"]["eager"],
                                             warm["wide_rounds_us"]["forward compiled"])]
wide_speedup_low, wide_speedup_high = min(wide_round_speedups), max(wide_round_speedups)

print(f"cold (empty cache folder): probe {probe_cold_s:.1f} s, then the first step {cold_first_s:.1f} s "
      f"(forward and backward {cold_forward_backward_s:.1f} s, the optimizer {cold_optimizer_s:.1f} s); "
      f"the C++ compiler used {cold_compiler_cpu_s:.1f} s of CPU and wrote {cold_new_libraries} shared libraries")
print(f"  Inductor's FX graph cache: {cold_fx_misses} misses, {cold_fx_hits} hits")
print(f"warm (same folder, new process): probe {probe_warm_s:.2f} s, first step {warm_first_s:.2f} s; "
      f"compiler CPU {warm_compiler_cpu_s:.2f} s; FX graph cache {warm_fx_misses} misses, {warm_fx_hits} hits; "
      f"AOTAutograd cache {warm_aot_hits} hits")
print(f"eager: first step {eager_first_ms:.1f} ms")
print(f"Python objects in the cold process after compiling: {python_objects_after_compile:,}")
print(f"\nsteady, µs of thread CPU time per step, lowest batch of {STEADY_STEPS} steps in {STEADY_ROUNDS} "
      f"interleaved rounds (garbage collector paused in each):")
for k, v in steady.items():
    print(f"  {k:<32}{v:>8.0f}   {eager_us / v:.2f}x eager's speed")
print(f"the whole recipe, round by round: {recipe_speedup_low:.2f}x to {recipe_speedup_high:.2f}x eager's speed")
print(f"the whole recipe saved {saving_us:+.0f} µs a step against eager, {beats_fused_by_us:+.0f} µs against fused "
      f"Adam; its cold start cost {first_extra_s:.1f} s more than eager's first step")
print(f"\none step: Python calls inside torch / aten calls the profiler recorded")
for k in steady:
    print(f"  {k:<32}{sum(calls[k].values()):>6} / {cold['dispatcher_calls'][k]}")
print(f"the compiled forward's {extra_python_calls} extra Python calls, by file (top three): {extra_python_files}")
print(f"same loss: {same_loss}")
print(f"\nwidth 1024 (warm process), forward and loss compiled: its first compiled step took "
      f"{wide_compile_s:.1f} s; steady {wide_eager_us:,.0f} µs eager, {wide_compiled_us:,.0f} µs compiled "
      f"({wide_speedup:.2f}x; rounds "
      f"{wide_speedup_low:.2f}x to {wide_speedup_high:.2f}x)")

import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
steps = range(1, FIRST_STEPS + 1)
ax.semilogy(steps, [t * 1e3 for t in eager_first], "o-", color="C0", markersize=3, label="eager")
cold_plot = [cold_first_s + probe_cold_s] + cold["recipe"]["first"][1:]
warm_plot = [warm_first_s + probe_warm_s] + warm["recipe"]["first"][1:]
ax.semilogy(steps, [t * 1e3 for t in cold_plot], "s-", color="C3", markersize=3,
            label="compiled, cold cache (probe and compile in step 1)")
ax.semilogy(steps, [t * 1e3 for t in warm_plot], "^-", color="C1", markersize=3,
            label="compiled, warm cache")
ax.set_xlabel("training step")
ax.set_ylabel("ms for the step (log scale)")
ax.set_title("Time per step over the first steps of Figure 1's loop")
ax.legend(fontsize=8)
plt.show()

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.6), width_ratios=[4, 2], layout="constrained")
labels = {"eager": "eager", "eager, fused Adam": "fused\nAdam", "forward compiled": "forward\ncompiled",
          "forward and optimizer compiled": "forward and\noptimizer\ncompiled"}
colors = ["C0", "C2", "C1", "C3"]
left.bar(range(4), list(steady.values()), color=colors, alpha=0.8)
for i, v in enumerate(steady.values()):
    left.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
left.set_xticks(range(4), [labels[k] for k in steady], fontsize=8)
left.set_ylim(0, max(steady.values()) * 1.2)
left.set_ylabel("µs per step (thread CPU time)")
left.set_title("Figure 1 (width 64)", fontsize=10)
right.bar(range(2), [wide_eager_us, wide_compiled_us], color=["C0", "C1"], alpha=0.8)
for i, v in enumerate((wide_eager_us, wide_compiled_us)):
    right.text(i, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
right.set_xticks(range(2), ["eager", "forward\ncompiled"], fontsize=8)
right.set_ylim(0, max(wide_eager_us, wide_compiled_us) * 1.2)
right.set_title("width 1024", fontsize=10)
fig.suptitle("The steady step, once compiled: one thread, best of interleaved rounds")
plt.show()

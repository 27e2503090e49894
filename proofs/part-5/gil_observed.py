"""Which calls release the GIL, seen from a second Python thread: it keeps counting during a matmul, stops during tolist().

A ticker thread counts in a pure-Python loop, which needs the GIL for every step, and notes
the time (time.perf_counter) every 2,000 steps. Meanwhile the main thread runs, one after
the other, with a short sleep between them: matrix products (torch.mm, 1024 x 1024, one
intra-op thread), an elementwise add on 4M floats, Tensor.tolist() on 3M floats,
torch.tensor() of a Python list of 500,000 floats, a pure-Python loop, and time.sleep. For
each phase the script divides the ticker's rate by its rate during the sleeps next to it:
near 1 means the main thread let go of the GIL for the whole call, near 0 that it held it,
in between that the two threads took turns (CPython hands the GIL over every
sys.getswitchinterval() seconds). It also prints the ticker's longest pause within each phase, as
a share of the phase. A call that holds the GIL stops the ticker, but not quite for the whole
phase: around the call the main thread runs bytecode and may hand the GIL over before it can
note the time, the more so when it waits for a core; the pause then comes in pieces. Each
such hand-over lets the ticker run for up to one switch interval, so the script sets the
interval to 1 ms (CPython's default is 5 ms) to keep those moments short next to a call.
How fast the ticker goes while the GIL is free depends on the cores: a thread that has the
GIL can only count on a free core, so while it runs the script also reads how much CPU the
rest of the machine used (/proc/stat minus its own CPU time; Linux; elsewhere it assumes
none) and reports the cores left free. With a free core of its own the ticker keeps its full
rate while a call releases the GIL; with less, it shares a core with the call. Its rate also
moves by some percent from one moment to the next, which the time.sleep phase, where the
main thread does nothing, shows. Whatever the cores, it goes many times faster while a call
releases the GIL than while one holds it, and while both threads run Python each gets the
GIL about half the time.
"""
import os
import sys
import threading
import time

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
default_switch_interval_ms = sys.getswitchinterval() * 1000
sys.setswitchinterval(0.001)
STEP = 2_000
stamps = []
stop = threading.Event()


def ticker():
    n = 0
    while not stop.is_set():
        for _ in range(STEP):
            n += 1
        stamps.append(time.perf_counter())


def machine_busy_seconds():
    """CPU time used on the cores this process may run on, in seconds, from /proc/stat's per-core
    lines (Linux): in a container, the whole machine's line would count other containers' cores."""
    mine = {f"cpu{i}" for i in os.sched_getaffinity(0)}
    busy = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *rest = line.split()
            if name in mine:
                user, nice, system, idle, iowait, irq, softirq, steal = map(int, rest[:8])
                busy += user + nice + system + irq + softirq + steal
    return busy / os.sysconf("SC_CLK_TCK")


m = torch.rand(1024, 1024)
big_a, big_b, big_out = torch.rand(4 << 20), torch.rand(4 << 20), torch.empty(4 << 20)
for_tolist = torch.rand(3_000_000)
a_list = torch.rand(500_000).tolist()


def repeat_for(seconds, fn):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()


def python_loop(seconds):
    t0, total = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for i in range(1000):
            total += i


PHASES = [  # label, what it runs, whether the generated or hand-written binding releases the GIL
    ("torch.mm (1024 x 1024)", lambda: repeat_for(0.25, lambda: torch.mm(m, m)), "releases"),
    ("torch.add(out=), 4M floats", lambda: repeat_for(0.25, lambda: torch.add(big_a, big_b, out=big_out)),
     "releases"),
    ("x.tolist(), 3M floats", lambda: for_tolist.tolist(), "holds"),
    ("torch.tensor(list), 500k", lambda: torch.tensor(a_list), "holds"),
    ("a Python loop", lambda: python_loop(0.25), "shares"),
    ("time.sleep", lambda: time.sleep(0.25), "releases"),
]
IDLE = 0.12
torch.mm(m, m), for_tolist[:1000].tolist(), torch.tensor(a_list[:1000])     # warm-up
linux = os.path.exists("/proc/stat")
wall0, ours0 = time.perf_counter(), time.process_time()
busy0 = machine_busy_seconds() if linux else 0.0
thread = threading.Thread(target=ticker, daemon=True)
thread.start()
time.sleep(IDLE)
spans = []                                      # (label, kind, start, end) of each phase
idle_spans = [(time.perf_counter() - IDLE, time.perf_counter())]
for label, run, kind in PHASES:
    start = time.perf_counter()
    run()
    end = time.perf_counter()
    spans.append((label, kind, start, end))
    time.sleep(IDLE)
    idle_spans.append((end, time.perf_counter()))
stop.set()
thread.join()
wall = time.perf_counter() - wall0
ours = time.process_time() - ours0
others = machine_busy_seconds() - busy0 - ours if linux else 0.0
cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
free_cores = max(0.0, min(cores, cores - others / wall))


def rate(lo, hi):
    """Ticker steps per second between two times."""
    n = sum(lo <= s < hi for s in stamps)
    return n * STEP / (hi - lo)


def longest_pause(start, end):
    """The longest stretch between ticker stamps within a phase, as a share of the phase."""
    inside = [start] + [s for s in stamps if start < s < end] + [end]
    return max(b - a for a, b in zip(inside, inside[1:])) / (end - start)


fractions, pauses = {}, {}
for i, (label, kind, start, end) in enumerate(spans):
    idle = (rate(*idle_spans[i]) + rate(*idle_spans[i + 1])) / 2
    fractions[label] = rate(start, end) / idle if idle else float("nan")
    pauses[label] = longest_pause(start, end)
mm_fraction = fractions["torch.mm (1024 x 1024)"]
add_fraction = fractions["torch.add(out=), 4M floats"]
tolist_fraction = fractions["x.tolist(), 3M floats"]
tensor_fraction = fractions["torch.tensor(list), 500k"]
python_fraction = fractions["a Python loop"]
sleep_fraction = fractions["time.sleep"]
released_fraction = min(mm_fraction, add_fraction)
held_fraction = max(tolist_fraction, tensor_fraction)
core_left_free = free_cores >= 1.5  # the counter needs a core of its own to run at its rate
tolist_pause_share = pauses["x.tolist(), 3M floats"]
tensor_pause_share = pauses["torch.tensor(list), 500k"]
held_pause_share = min(tolist_pause_share, tensor_pause_share)
released_pause_share = max(pauses["torch.mm (1024 x 1024)"], pauses["torch.add(out=), 4M floats"])
switch_interval_ms = sys.getswitchinterval() * 1000

print(f"cores: {cores}; left free by other programs while this ran: {free_cores:.1f}")
print("the ticker during each call: its progress relative to its rate in the sleeps around it,")
print("and its longest pause as a share of the call")
for label, kind, start, end in spans:
    print(f"  {label:30s}{(end - start) * 1000:7.0f} ms   progress {fractions[label]:5.2f}   "
          f"longest pause {pauses[label]:5.2f}   (the GIL: {kind})")
print(f"sys.getswitchinterval(): {switch_interval_ms:.0f} ms (set by this script; CPython's default "
      f"{default_switch_interval_ms:.0f} ms)")
print(f"progress while a call releases the GIL (the lower of mm and add) {released_fraction:.2f}, during the "
      f"Python loop {python_fraction:.2f}, while a call holds it (the higher of tolist and tensor) "
      f"{held_fraction:.3f}")

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
t0 = stamps[0]
ax.plot([s - t0 for s in stamps], [(i + 1) * STEP / 1e6 for i in range(len(stamps))], color="C0",
        lw=1.2, label="ticker thread: steps counted")
colors = {"releases": "C2", "holds": "C3", "shares": "C1"}
for label, kind, start, end in spans:
    ax.axvspan(start - t0, end - t0, color=colors[kind], alpha=0.18, lw=0)
    ax.text((start + end) / 2 - t0, 0.02, label, rotation=90, fontsize=7, ha="center",
            va="bottom", transform=ax.get_xaxis_transform())
ax.set_xlabel("seconds")
ax.set_ylabel("million steps counted")
ax.set_title("A second Python thread runs while a call releases the GIL (green), stops while it "
             "holds it (red)", fontsize=10)
ax.legend(loc="upper left", frameon=False, fontsize=8)
plt.show()

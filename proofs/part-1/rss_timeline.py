"""Resident memory over time: empty() takes none, each first write takes pages, a slice holds them, del of the last view gives them back.

It reads the process's resident set size (RSS) from Linux's /proc/self/smaps_rollup,
which the kernel computes by walking the process's page tables (exact; /proc/self/statm,
read where smaps_rollup is missing, comes from counters that newer kernels update in batches
per CPU); on a system without /proc it says so and reads nothing. First one small torch.empty and fill_, so the
code they run is already in memory. Then the script makes a 128 MiB float32 tensor with
torch.empty, writes it in 16 chunks (sampling RSS after each: each fill_ returns before the
next starts), keeps a 1-element slice, deletes the tensor, clones the slice, and deletes the
slice. Each event is one sample of RSS and of the time since the start. It also reports the
CPU and whether glibc's malloc serves the process (nothing preloaded, no malloc variables
set), since handing a freed block of this size straight back to the kernel is glibc's doing.
"""
import ctypes
import os
import platform
import time

import matplotlib.pyplot as plt
import torch

linux_proc = os.path.exists("/proc/self/statm")  # resident memory is read from Linux's /proc
if not linux_proc:
    print("no /proc/self here (not Linux): resident memory cannot be read, so every reading below is 0")
PAGE = os.sysconf("SC_PAGE_SIZE")
# Whether a freed block this big goes straight back to the kernel is the C library's doing
# (glibc unmaps it): the facts the page's claim about that depends on.
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
libc_name = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
glibc_malloc = bool(libc_name and libc_name.startswith("glibc") and hasattr(ctypes.CDLL(None), "mallinfo2")
                    and not os.environ.get("LD_PRELOAD")
                    and not any(k.startswith("MALLOC_") or k == "GLIBC_TUNABLES" for k in os.environ))
EXACT = os.path.exists("/proc/self/smaps_rollup")
torch.set_num_threads(1)
N = 32 * 2**20  # float32 elements: 128 MiB
CHUNKS = 16
tensor_mib = N * 4 / 2**20


def rss_mib():
    """Resident set size of this process, in MiB (0 where there is no /proc)."""
    if not linux_proc:
        return 0.0
    if EXACT:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    return int(line.split()[1]) / 1024  # kB
    with open("/proc/self/statm") as f:  # second field: resident pages
        return int(f.read().split()[1]) * PAGE / 2**20


torch.empty(1024).fill_(0.0)  # warm-up: the code of empty and fill_ is paged in before we start


t0 = time.perf_counter_ns()
samples = []  # (ms since start, RSS MiB, event or "")


def sample(event=""):
    samples.append(((time.perf_counter_ns() - t0) / 1e6, rss_mib(), event))
    return samples[-1][1]


rss_start_mib = sample("start")
x = torch.empty(N)
rss_empty_mib = sample("empty")
chunk = N // CHUNKS
for i in range(CHUNKS):
    x[i * chunk:(i + 1) * chunk].fill_(1.0)  # first touch of these pages
    sample("16 fills" if i == CHUNKS - 1 else "")
rss_filled_mib = samples[-1][1]
chunk_rss = [rss for _, rss, _ in samples[-CHUNKS:]]
rises_each_chunk = all(b - a > 0.5 * tensor_mib / CHUNKS
                       for a, b in zip([rss_empty_mib] + chunk_rss, chunk_rss))
s = x[:1]
rss_sliced_mib = sample("s = x[:1]")
del x
rss_del_x_mib = sample("del x")
c = s.clone()
rss_clone_mib = sample("s.clone()")
del s
rss_del_s_mib = sample("del s")

print(f"RSS read from /proc/self/{'smaps_rollup' if EXACT else 'statm'}")
print(f"{'ms':>7}{'RSS MiB':>9}  event (x = torch.empty(N); 16 fills: x.fill_ chunk by chunk)")
for ms, rss, event in samples:
    if event:
        print(f"{ms:>7.1f}{rss:>9.0f}  {event}")
empty_took_mib = rss_empty_mib - rss_start_mib
empty_took_kib = empty_took_mib * 1024
fill_took_mib = rss_filled_mib - rss_empty_mib
kept_by_slice_mib = rss_del_x_mib - rss_start_mib
returned_mib = rss_del_x_mib - rss_del_s_mib
fill_fraction = fill_took_mib / tensor_mib
kept_fraction = kept_by_slice_mib / tensor_mib
returned_fraction = returned_mib / tensor_mib
print(f"tensor {tensor_mib:.0f} MiB: empty() took {empty_took_kib:.0f} KiB, writing it took "
      f"{fill_took_mib:.0f} MiB, a 1-element slice kept {kept_by_slice_mib:.0f} MiB after del x, "
      f"del s gave back {returned_mib:.0f} MiB")

fig, ax = plt.subplots(figsize=(8, 4.5))
steps = range(len(samples))
rss_values = [rss for _, rss, _ in samples]
ax.plot(steps, rss_values, "o-", drawstyle="steps-post", color="C0", ms=4)
ax.axhline(rss_start_mib + tensor_mib, color="C7", ls=":", lw=1)
ax.text(0, rss_start_mib + tensor_mib + 2, f"start + {tensor_mib:.0f} MiB (the tensor)",
        fontsize=8, va="bottom", color="C7")
mid = 2 + CHUNKS // 2
ax.annotate("one dot per chunk written:\nthe first write of each page\nmakes it resident", (mid, samples[mid][1]),
            xytext=(mid + 2.5, samples[mid][1] - 45), fontsize=8, arrowprops={"arrowstyle": "->", "color": "C7"})
ticks = [i for i, (_, _, event) in enumerate(samples) if event]
labels = [samples[i][2] for i in ticks]
ax.set_xticks(ticks, labels, rotation=40, ha="right", rotation_mode="anchor", fontsize=8)
ax.set_xlabel(f"events in order, {samples[-1][0]:.0f} ms in all (each dot: one RSS reading)")
ax.set_ylabel("resident memory (MiB)")
ax.set_title("Process RSS: pages arrive on first write and leave with the last view")
ax.grid(True, axis="y", alpha=0.3)
fig.tight_layout()
plt.show()

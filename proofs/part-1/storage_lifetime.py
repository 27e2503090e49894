"""A storage lives while anything refers to it, and so do its pages: a one-element slice, a saved tensor or a NumPy array keeps all of it.

First, PyTorch's view. Each scenario makes a 64 MiB float32 tensor, takes a weak reference to
its storage (torch.multiprocessing.reductions.StorageWeakRef, which wraps the private storage
methods _weak_ref and _expired), drops the name of the big tensor, and asks whether the storage
is still alive and how many bytes it holds. The holders: a 1-element slice, its clone(), a
tensor saved by autograd for backward (the node's private _saved_self, at the address x's
storage had), and an array from .numpy(). This part works on any platform: it asks PyTorch,
not the operating system. A missing private API raises.

Then the operating system's view: the process's resident set size (RSS), read from Linux's
/proc/self/smaps_rollup, which the kernel computes by walking the process's page tables (exact;
/proc/self/statm, read where smaps_rollup is missing, comes from counters that newer kernels
update in batches per CPU); on a system without /proc it says so and reads nothing. First one
small torch.empty and fill_, so the code they run is already in memory. Then the script makes a
128 MiB float32 tensor with torch.empty, writes it in 16 chunks (sampling RSS after each: each
fill_ returns before the next starts), keeps a 1-element slice, deletes the tensor, clones the
slice, and deletes the slice. Each event is one sample of RSS and of the time since the start.
It also reports the page size, whether malloc variables are set (MALLOC_PERTURB_, for one, makes
glibc write every block it hands out) and whether glibc hands out PyTorch's blocks (its count of
bytes handed out, mallinfo2, grows by a 1 MiB tensor's block), since handing a freed block of
this size straight back to the kernel is glibc's doing.
"""
import ctypes
import os
import platform
import time

import matplotlib.pyplot as plt
import torch
from torch.multiprocessing.reductions import StorageWeakRef


N = 16 * 2**20  # float32 elements: 64 MiB
big_mib = N * 4 / 2**20
rows = []


def report(label, holder, ref):
    """Record whether the storage behind `ref` is alive after `label`, and who holds it."""
    alive = not ref.expired()
    rows.append((label, alive, holder if alive else "nothing: freed"))
    return alive


# 1. A one-element slice.
x = torch.zeros(N)
ref = StorageWeakRef(x.untyped_storage())
s = x[:1]
del x
slice_keeps_alive = report("s = x[:1]; del x", "s, 1 element", ref)
slice_storage_mib = s.untyped_storage().nbytes() / 2**20
slice_data_bytes = s.numel() * s.element_size()
c = s.clone()
clone_storage_bytes = c.untyped_storage().nbytes()
report("c = s.clone()", "s (c has its own)", ref)
del s
freed_after_slice = not report("del s", "", ref)

# 2. A tensor saved by autograd: y = x * w saves x for w's gradient.
w = torch.ones(1, requires_grad=True)
x = torch.rand(N)
ref = StorageWeakRef(x.untyped_storage())
x_address = x.untyped_storage().data_ptr()
y = (x * w).sum()
del x
saved = y.grad_fn.next_functions[0][0]._saved_self  # private: what MulBackward0 saved
saved_is_x_storage = saved.untyped_storage().data_ptr() == x_address  # x's very bytes, not a copy
del saved
graph_keeps_alive = report("y = (x * w).sum(); del x", "the graph (MulBackward0)", ref)
y.backward()  # backward frees the graph's saved tensors
freed_after_backward = not report("y.backward()", "", ref)

# 3. A NumPy array from .numpy() shares the storage and holds it.
x = torch.zeros(N)
ref = StorageWeakRef(x.untyped_storage())
a = x.numpy()
del x
numpy_keeps_alive = report("a = x.numpy(); del x", "the NumPy array a", ref)
del a
freed_after_numpy = not report("del a", "", ref)

print(f"storage of a {big_mib:.0f} MiB tensor, after each step:")
print(f"{'step':<28}{'alive':<7}held by")
for label, alive, holder in rows:
    print(f"{label:<28}{str(alive):<7}{holder}")
print(f"a slice of {slice_data_bytes} bytes held {slice_storage_mib:.0f} MiB; "
      f"its clone holds {clone_storage_bytes} bytes")


# The operating system's view: resident memory over one tensor's life.
linux_proc = os.path.exists("/proc/self/statm")  # resident memory is read from Linux's /proc
if not linux_proc:
    print("no /proc/self here (not Linux): resident memory cannot be read, so every reading below is 0")
PAGE = os.sysconf("SC_PAGE_SIZE")
page_bytes = PAGE
# Whether a freed block this big goes straight back to the kernel is the C library's doing
# (glibc unmaps it): the facts the page's claim about that depends on.
x86_64 = platform.machine().lower() in ("x86_64", "amd64")
libc_name = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
malloc_tuned = any(k.startswith("MALLOC_") or k == "GLIBC_TUNABLES" for k in os.environ)
glibc_malloc = bool(libc_name and libc_name.startswith("glibc") and hasattr(ctypes.CDLL(None), "mallinfo2")
                    and not os.environ.get("LD_PRELOAD") and not malloc_tuned)


class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def glibc_handed_out():
    """Bytes glibc's malloc has handed out: from its heap, plus in blocks it mapped (mallinfo2)."""
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = Mallinfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


glibc_serves_blocks = False
if glibc_malloc:
    before = glibc_handed_out()
    probe = torch.empty(2**20, dtype=torch.uint8)
    glibc_serves_blocks = glibc_handed_out() - before >= 2**20
    del probe
EXACT = os.path.exists("/proc/self/smaps_rollup")
rss_exact = EXACT  # statm, the fallback, can lag a chunk behind
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

fig, ax = plt.subplots(figsize=(8, 4.2))
# x positions: the sixteen fills share the width of three events, so the lifetime events get the room
positions, x_pos = [], 0.0
for i, (_, _, event) in enumerate(samples):
    fill = 2 <= i < 2 + CHUNKS
    x_pos += (3 / CHUNKS) if fill and i > 2 else (1.0 if i else 0.0)
    positions.append(x_pos)
rss_values = [rss for _, rss, _ in samples]
ax.plot(positions, rss_values, "o-", drawstyle="steps-post", color="C0", ms=4)
ax.axhline(rss_start_mib + tensor_mib, color="C7", ls=":", lw=1)
ax.text(0, rss_start_mib + tensor_mib + 3, f"start + {tensor_mib:.0f} MiB (the tensor)",
        fontsize=9, va="bottom", color="C7")
ax.set_ylim(rss_start_mib - 0.1 * tensor_mib, rss_start_mib + 1.25 * tensor_mib)
mid = 2 + CHUNKS // 2
ax.annotate("16 fills: the first write\nof each page makes it\nresident", (positions[mid], samples[mid][1]),
            xytext=(positions[mid] + 0.8, samples[mid][1] - 50), fontsize=9,
            arrowprops={"arrowstyle": "->", "color": "C7"})
ticks = [positions[i] for i, (_, _, event) in enumerate(samples) if event]
labels = [event for _, _, event in samples if event]
ax.set_xticks(ticks, labels, rotation=30, ha="right", rotation_mode="anchor", fontsize=9)
ax.set_xlabel(f"events in order, {samples[-1][0]:.0f} ms in all (each dot: one RSS reading)")
ax.set_ylabel("resident memory (MiB)")
ax.set_title("Process RSS: pages arrive on first write and leave with the last view")
ax.grid(True, axis="y", alpha=0.3)
fig.tight_layout()
plt.show()

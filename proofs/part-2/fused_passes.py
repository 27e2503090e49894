"""Fusing c + a * b into one call saves a pass over memory, as its bytes predict.

On 16M float32 elements (64 MiB per tensor), one thread, minimum of 11 rounds with the
variants interleaved, each round one call of each. Bytes are counted as memory moves them:
what a kernel reads and writes, plus, for each write, the line a write-allocate cache (x86's,
for ordinary stores) reads before writing it. One add (torch.add(a, b, out=o): 8 bytes read,
4 written, 4 read before writing) gives the bandwidth at 16 bytes per element; then
c + a * b three ways. Unfused, with its temporary allocated once: torch.mul(a, b, out=t) then
torch.add(c, t, out=o), two passes of 16 bytes. Fused: torch.addcmul(c, a, b, out=o), one pass
of 20 (three reads, one write, one read before it). And as it is usually written, c + a * b,
which also allocates its two results on every call. The prediction for the first two is
their bytes at the add's bandwidth: twice the add, and five fourths of it. (Counting only
what the kernels read and write, 12, 24 and 16 bytes, would predict four thirds for the
fused call.)
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import time

import matplotlib.pyplot as plt
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
N = 1 << 24
a, b, c = torch.rand(N), torch.rand(N), torch.rand(N)
t, o = torch.empty(N), torch.empty(N)


def unfused():
    torch.mul(a, b, out=t)
    torch.add(c, t, out=o)


VARIANTS = {
    "add": lambda: torch.add(a, b, out=o),
    "unfused": unfused,
    "fused": lambda: torch.addcmul(c, a, b, out=o),
    "as written": lambda: c + a * b,
}
for fn in VARIANTS.values():
    fn()  # warm-up
best = {name: float("inf") for name in VARIANTS}
for _ in range(11):
    for name, fn in VARIANTS.items():
        t0 = time.thread_time_ns()
        fn()
        best[name] = min(best[name], time.thread_time_ns() - t0)
us = {name: ns / 1e3 for name, ns in best.items()}

add_gbs = 16 * N / best["add"]  # bytes per ns = GB/s, counting the line read before each write
predicted_us = {"unfused": 32 * N / add_gbs / 1e3, "fused": 20 * N / add_gbs / 1e3}
unfused_predicted_us, fused_predicted_us = predicted_us["unfused"], predicted_us["fused"]
unfused_us, fused_us, written_us = us["unfused"], us["fused"], us["as written"]
unfused_vs_fused = unfused_us / fused_us
predicted_ratio = 32 / 20
ratio_over_predicted = unfused_vs_fused / predicted_ratio
fused_over_predicted = fused_us / predicted_us["fused"]
unfused_over_predicted = unfused_us / predicted_us["unfused"]
saved_pct = 100 * (1 - fused_us / unfused_us)
written_vs_fused = written_us / fused_us
fused_matches = bool(torch.allclose(torch.addcmul(c, a, b), c + a * b))

print(f"{N:,} float32 elements, 1 thread, min of 11 rounds")
print(f"one add: {us['add']:,.0f} µs, {add_gbs:.1f} GB/s for the 16 bytes per element memory moves for it")
print(f"{'c + a * b':<34}{'bytes/el':>9}{'predicted µs':>14}{'measured µs':>13}")
print(f"{'mul, then add (out=, temporary t)':<34}{32:>9}{predicted_us['unfused']:>14,.0f}{unfused_us:>13,.0f}")
print(f"{'addcmul (fused)':<34}{20:>9}{predicted_us['fused']:>14,.0f}{fused_us:>13,.0f}")
print(f"{'c + a * b as written':<34}{'32+':>9}{'':>14}{written_us:>13,.0f}")
print(f"fusing saved {saved_pct:.0f} % of the unfused time; unfused / fused: {unfused_vs_fused:.2f}x; the bytes predict {predicted_ratio:.2f}x "
      f"({ratio_over_predicted:.2f} of it); as written / fused: {written_vs_fused:.1f}x "
      f"(it also allocates two 64 MiB results per call); same values: {fused_matches}")

fig, ax = plt.subplots(figsize=(8, 3.4))
labels = ["mul, then add\n(two passes, 32 B/el)", "addcmul\n(one pass, 20 B/el)", "c + a * b as written\n(two passes, two allocations)"]
measured = [unfused_us, fused_us, written_us]
ax.barh([2, 1, 0], [m / 1e3 for m in measured], color=["C0", "C2", "C3"], height=0.55, label="measured")
ax.plot([predicted_us["unfused"] / 1e3, predicted_us["fused"] / 1e3], [2, 1], "k|", ms=22, mew=2,
        label="predicted: bytes at one add's bandwidth")
ax.set_yticks([2, 1, 0], labels, fontsize=8)
ends = [max(unfused_us, predicted_us["unfused"]), max(fused_us, predicted_us["fused"]), written_us]
for y, m, end in zip([2, 1, 0], measured, ends):
    ax.text(end / 1e3, y, f"  {m / 1e3:.1f} ms", va="center", fontsize=8)
ax.set_xlim(0, max(measured) / 1e3 * 1.2)
ax.set_xlabel(f"time for c + a * b on {N:,} float32 elements, one thread (ms)")
ax.legend(frameon=False, loc="upper right", fontsize=8)
ax.set_title("Fusing saves a pass over memory")
fig.tight_layout()
plt.show()

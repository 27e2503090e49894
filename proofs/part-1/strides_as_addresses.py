"""A view's element [i, j] lives at storage index offset + i*stride[0] + j*stride[1]; views may skip or repeat cells.

Sixteen float32 values 0..15 fill a storage, held by a plain tensor s = torch.arange(16.),
so each value is its own storage index. Five
views are laid over it: a column, the diagonal, a row repeated by expand (stride 0), sliding
windows made by unfold (overlapping reads) and a Hankel matrix made by as_strided with
strides (1, 1). For each view the proof computes every element's address from the size,
stride and offset, checks it against the value actually read, and counts how many times each
storage cell is read. It ends with what PyTorch refuses: as_strided asked to read past the end
of the storage or given a negative stride, and an in-place write into the expanded view, whose
elements share cells; and with the same write into the Hankel view, which overlaps in a way
that check does not detect.
"""
import itertools

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

s = torch.arange(16, dtype=torch.float32)  # a plain tensor over 16 floats: value == storage index
m = s.view(4, 4)
views = {
    "m[:, 1]": m[:, 1],
    "m.diagonal()": m.diagonal(),
    "m[0].expand(3, 4)": m[0].expand(3, 4),
    "s.unfold(0, 4, 3)": s.unfold(0, 4, 3),
    "s.as_strided((4, 4), (1, 1))": s.as_strided((4, 4), (1, 1)),
}


def addresses(t):
    """Storage index of every element, in reading order, from size, stride and offset alone."""
    ranges = [range(n) for n in t.shape]
    return [t.storage_offset() + sum(i * step for i, step in zip(idx, t.stride()))
            for idx in itertools.product(*ranges)]


print(f"{'view':<30}{'size':<9}{'stride':<9}{'offset':>6}{'reads':>6}{'cells':>6}  contiguous")
formula_holds = True
reads = {}
for name, t in views.items():
    addr = addresses(t)
    formula_holds &= addr == [int(v) for v in t.flatten().tolist()]
    reads[name] = addr
    print(f"{name:<30}{str(tuple(t.shape)):<9}{str(t.stride()):<9}{t.storage_offset():>6}"
          f"{len(addr):>6}{len(set(addr)):>6}  {t.is_contiguous()}")
shares_storage = all(t.untyped_storage().data_ptr() == s.untyped_storage().data_ptr()
                     for t in views.values())
print(f"address formula matches every value read: {formula_holds}; one storage: {shares_storage}")

diagonal_stride = views["m.diagonal()"].stride()[0]
expand_stride = str(views["m[0].expand(3, 4)"].stride())
unfold_reads = len(reads["s.unfold(0, 4, 3)"])
unfold_cells = len(set(reads["s.unfold(0, 4, 3)"]))
hankel_reads = len(reads["s.as_strided((4, 4), (1, 1))"])
hankel_cells = len(set(reads["s.as_strided((4, 4), (1, 1))"]))
hankel_is_hankel = all(views["s.as_strided((4, 4), (1, 1))"][i, j].item() == i + j
                       for i in range(4) for j in range(4))

# as_strided trusts the strides but checks the last address against the storage's size.
try:
    s.as_strided((4, 4), (4, 2))
    out_of_bounds_error = ""
except RuntimeError as err:
    out_of_bounds_error = str(err)
out_of_bounds_raises = "out of bounds" in out_of_bounds_error
print("s.as_strided((4, 4), (4, 2)) raises:")
print("  " + out_of_bounds_error)


def error_of(fn):
    """The message of the RuntimeError fn raises, or '' if it runs."""
    try:
        fn()
        return ""
    except RuntimeError as err:
        return str(err)


# No negative strides: PyTorch has none (which is also why flip() copies).
negative_stride_error = error_of(lambda: s.as_strided((4,), (-1,), 15))
negative_stride_raises = "Negative strides are not supported" in negative_stride_error
print("s.as_strided((4,), (-1,), 15) raises:")
print("  " + negative_stride_error)

# Writing in place into a view whose elements share cells. Copies of the storage, so the
# views above stay as they were.
expanded = s.clone().view(4, 4)[0].expand(3, 4)
expand_write_error = error_of(lambda: expanded.add_(1))
expand_write_raises = "more than one element of the written-to tensor" in expand_write_error
print("m[0].expand(3, 4).add_(1) raises:")
print("  " + expand_write_error.split(".")[0] + ".")
seven = torch.arange(7, dtype=torch.float32)
hankel_write_error = error_of(lambda: seven.as_strided((4, 4), (1, 1)).add_(1))
hankel_reads_per_cell = [reads["s.as_strided((4, 4), (1, 1))"].count(k) for k in range(7)]
hankel_write_ran = hankel_write_error == ""
hankel_added_once_per_read = seven.tolist() == [k + n for k, n in zip(range(7), hankel_reads_per_cell)]
print(f"arange(7).as_strided((4, 4), (1, 1)).add_(1) ran without error: {hankel_write_ran}; "
      f"cells 0..6 became {[int(v) for v in seven.tolist()]}, not 1..7: each grew by the number of "
      f"elements that read it, {hankel_reads_per_cell}: {hankel_added_once_per_read}")

# Figure: the storage, then each view's footprint on it (one cell = one float, 4 bytes).
fig, ax = plt.subplots(figsize=(8.6, 4.2))
rows = [("s: 16 floats, 0 to 15", None)] + list(reads.items())
for row, (name, addr) in enumerate(rows):
    y = -row * 1.25
    ax.text(-0.3, y + 0.45, name, ha="right", va="center", fontsize=10, family="monospace" if addr else None)
    for cell in range(16):
        if addr is None:
            ax.add_patch(Rectangle((cell, y), 0.92, 0.9, color="C0", alpha=0.18))
            ax.text(cell + 0.46, y + 0.45, str(cell), ha="center", va="center", fontsize=10)
            continue
        count = addr.count(cell)
        if count:
            ax.add_patch(Rectangle((cell, y), 0.92, 0.9, color=f"C{row}", alpha=min(0.3 + 0.2 * count, 1)))
            if count > 1:
                ax.text(cell + 0.46, y + 0.45, f"×{count}", ha="center", va="center", fontsize=9,
                        fontweight="bold")
        else:
            ax.add_patch(Rectangle((cell, y), 0.92, 0.9, fill=False, edgecolor=f"C{row}", alpha=0.3))
    if addr is not None:
        t = views[name]
        ax.text(16.3, y + 0.45, f"strides {t.stride()}", va="center", fontsize=9.5)
ax.set_xlim(-7.6, 21.6)
ax.set_ylim(-len(reads) * 1.25 - 0.2, 1.1)
ax.axis("off")
ax.set_title("Five views over one storage: shaded, the cells a view reads; ×n, read n times", fontsize=11)
fig.tight_layout()
plt.show()

"""A tensor is sizes, strides and an offset laid over a flat storage, so views copy nothing.

A 3x4 float32 tensor, its transpose and a strided slice are three ways of reading the
same 48-byte storage. The proof prints their metadata, writes through a view, reads the
shared version counter, expands one float to a million, tries view() where it cannot
work and checks the allocator's 64-byte alignment.
"""
import textwrap

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
views = {"base": base, "base.t()": base.t(), "base[1:, ::2]": base[1:, ::2]}


def describe(t):
    """Metadata of `t` and where its first element sits relative to the base's."""
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.data_ptr() - base.data_ptr())


print(f"{'tensor':<15}{'size':<9}{'stride':<9}{'offset':>7}{'data_ptr - base':>17}")
for name, t in views.items():
    shape, stride, offset, ptr_delta = describe(t)
    print(f"{name:<15}{str(shape):<9}{str(stride):<9}{offset:>7}{ptr_delta:>15} B")

# One storage behind all three: same storage pointer, 12 floats = 48 bytes.
storage_bytes = base.untyped_storage().nbytes()
shared_storage = all(t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
                     for t in views.values())
t_stride = str(views["base.t()"].stride())
slice_stride = str(views["base[1:, ::2]"].stride())
slice_offset = views["base[1:, ::2]"].storage_offset()
slice_ptr_offset_bytes = views["base[1:, ::2]"].data_ptr() - base.data_ptr()
print(f"one storage shared by all three: {shared_storage}, {storage_bytes} bytes")

# A write through a view is a write into the shared storage.
sl = views["base[1:, ::2]"]
try:
    version_before = base._version  # private attribute: the version counter
except AttributeError:
    version_before = None
sl[0, 0] = 100.0
write_visible = base[1, 0].item() == 100.0 and views["base.t()"][0, 1].item() == 100.0
print(f"sl[0, 0] = 100  ->  base[1, 0] is now {base[1, 0].item():.0f}, "
      f"base.t()[0, 1] is now {views['base.t()'][0, 1].item():.0f}")
if version_before is None:
    shared_version = False
    print("version counter (_version): not available in this torch")
else:
    shared_version = base._version == sl._version == views["base.t()"]._version
    print(f"version counter: base {version_before} -> {base._version}, "
          f"slice {sl._version}, transpose {views['base.t()']._version} (one shared counter)")

# expand: a million logical floats, one float of storage, stride 0 on both dims.
big = torch.tensor([1.0]).expand(1000, 1000)
expand_stride = str(big.stride())
expand_logical_mib = big.numel() * big.element_size() / 2**20
expand_storage_bytes = big.untyped_storage().nbytes()
print(f"expand(1000, 1000): stride {expand_stride}, {expand_logical_mib:.1f} MiB logical, "
      f"{expand_storage_bytes} bytes of storage")

# view() only reinterprets metadata; a transpose cannot be flattened without a copy.
try:
    base.t().view(12)
    view_error = ""
except RuntimeError as err:
    view_error = str(err)
print("base.t().view(12) raises RuntimeError:")
print(textwrap.indent(textwrap.fill(view_error, 86), "  "))

# The CPU allocator hands out 64-byte aligned blocks, whatever the size.
sizes = [1, 3, 17, 1000, 12345, 1 << 20]
aligned_64 = all(torch.empty(n).data_ptr() % 64 == 0 for n in sizes)
print(f"data_ptr % 64 == 0 for sizes {sizes}: {aligned_64}")

# Figure: the storage as a row of 12 cells; under it, for each view, the cells it
# reads, numbered in the order the view reads them (row-major over its own shape).
fresh = torch.arange(12, dtype=torch.float32).reshape(3, 4)  # values = storage index
orders = {"base": fresh, "base.t()": fresh.t(), "base[1:, ::2]": fresh[1:, ::2]}
fig, ax = plt.subplots(figsize=(8, 3.2))
for row, (name, t) in enumerate([("storage", None)] + list(orders.items())):
    y = -row * 1.3
    ax.text(-0.3, y + 0.5, name, ha="right", va="center", fontsize=10)
    read_order = {}
    if t is not None:
        read_order = {int(s): k for k, s in enumerate(t.flatten().tolist())}
    for cell in range(12):
        if t is None:  # the storage itself: label cells with their index
            ax.add_patch(Rectangle((cell, y), 0.92, 0.92, color="C0", alpha=0.15))
            ax.text(cell + 0.46, y + 0.46, str(cell), ha="center", va="center")
        elif cell in read_order:
            ax.add_patch(Rectangle((cell, y), 0.92, 0.92, color=f"C{row}", alpha=0.45))
            ax.text(cell + 0.46, y + 0.46, str(read_order[cell]), ha="center",
                    va="center", fontweight="bold")
        else:
            ax.add_patch(Rectangle((cell, y), 0.92, 0.92, fill=False,
                                   edgecolor=f"C{row}", alpha=0.35))
    if t is not None:
        ax.text(12.2, y + 0.5, f"size {tuple(t.shape)}, stride {t.stride()}, "
                f"offset {t.storage_offset()}", va="center", fontsize=9)
ax.set_xlim(-2.6, 19.5)
ax.set_ylim(-3 * 1.3 - 0.2, 1.1)
ax.axis("off")
ax.set_title("Three views, one storage: cell = storage index, number = reading order")
fig.tight_layout()
plt.show()

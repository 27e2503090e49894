"""channels_last keeps the NCHW shape and changes only the strides: the bytes are stored pixel by pixel.

A 1x3x2x3 image (3 channels, 2x3 pixels) is made contiguous in the default layout and in
torch.channels_last. The proof prints both stride tuples, reads each storage in order to
show which (channel, row, column) sits in each cell, checks is_contiguous against both
memory formats, and then follows the layout through operations: an elementwise op, a mixed
add, a 1x1 convolution, clone (whose default is torch.preserve_format), view and reshape.
It times one 3x3 convolution in each format, as an example of how to ask, not a rule.
c10/core/MemoryFormat.h computes the channels-last strides in get_channels_last_strides_2d:
the proof reads that function's four-dimensional case from the header the package ships,
evaluates its assignments for two shapes, and compares them with the strides PyTorch gave.
"""
import os
import re

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

N, C, H, W = 1, 3, 2, 3
x = torch.arange(N * C * H * W, dtype=torch.float32).reshape(N, C, H, W)
cl = x.contiguous(memory_format=torch.channels_last)
nchw_strides = str(x.stride())
channels_last_strides = str(cl.stride())
same_shape = x.shape == cl.shape
same_values = torch.equal(x, cl)
copied = cl.data_ptr() != x.data_ptr()


def storage_order(t):
    """(c, h, w) of the element held in each storage cell, in storage order."""
    where = {}
    for c in range(C):
        for h in range(H):
            for w in range(W):
                offset = t.storage_offset() + sum(i * s for i, s in zip((0, c, h, w), t.stride()))
                where[offset] = (c, h, w)
    return [where[i] for i in range(len(where))]


orders = {"contiguous (NCHW)": storage_order(x), "channels_last (NHWC order)": storage_order(cl)}
print(f"shape {tuple(x.shape)} for both; same values: {same_values}; channels_last is a copy: {copied}")
print(f"strides: contiguous {nchw_strides}, channels_last {channels_last_strides}")
for name, order in orders.items():
    print(f"{name:<27} storage holds channels " + "".join(str(c) for c, _, _ in order))
cl_is_contiguous = cl.is_contiguous()
cl_is_channels_last = cl.is_contiguous(memory_format=torch.channels_last)
print(f"channels_last tensor: is_contiguous() {cl_is_contiguous}, "
      f"is_contiguous(memory_format=torch.channels_last) {cl_is_channels_last}")

# With one channel, or one pixel, both stride orders describe the same bytes.
one_channel, one_pixel = torch.zeros(1, 1, 4, 4), torch.zeros(2, 3, 1, 1)
ambiguous_both = all(t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last)
                     for t in (one_channel, one_pixel))
print(f"a 1x1x4x4 and a 2x3x1x1 tensor are contiguous in both formats at once: {ambiguous_both}")

# The layout travels through operations.
relu_keeps = torch.relu(cl).stride() == cl.stride()
mixed_first_cl = (cl + x).is_contiguous(memory_format=torch.channels_last)
mixed_first_nchw = (x + cl).is_contiguous()
conv = torch.nn.Conv2d(C, 4, kernel_size=1)
conv_keeps = conv(cl).is_contiguous(memory_format=torch.channels_last)
try:
    cl.view(N, -1)
    view_flat_works = True
except RuntimeError:
    view_flat_works = False
reshape_flat_copies = cl.reshape(N, -1).data_ptr() != cl.data_ptr()
print(f"relu(cl) keeps channels_last strides: {relu_keeps}; conv(cl) is channels_last: {conv_keeps}")
print(f"cl + x is channels_last: {mixed_first_cl}; x + cl is contiguous: {mixed_first_nchw}")
print(f"cl.view(1, -1) works: {view_flat_works}; cl.reshape(1, -1) copies: {reshape_flat_copies}")

# One timing, as an example and not a rule: a 3x3 convolution of 64 to 64 channels on a batch of
# 8 images of 56x56, in each format (model and input converted alike), on the CPU's default
# convolution library and threads. The two take turns, and each keeps the minimum over rounds of
# the mean of a few calls, in wall-clock time.
import time  # noqa: E402

torch.manual_seed(0)
conv_nchw = torch.nn.Conv2d(64, 64, kernel_size=3, padding=1).eval()
conv_cl = torch.nn.Conv2d(64, 64, kernel_size=3, padding=1).eval().to(memory_format=torch.channels_last)
conv_cl.load_state_dict(conv_nchw.state_dict())
batch_nchw = torch.rand(8, 64, 56, 56)
batch_cl = batch_nchw.contiguous(memory_format=torch.channels_last)
conv_ms = {"NCHW": float("inf"), "channels_last": float("inf")}
with torch.no_grad():
    for _ in range(7):
        for name, model, batch in (("NCHW", conv_nchw, batch_nchw), ("channels_last", conv_cl, batch_cl)):
            model(batch)
            t0 = time.perf_counter()
            for _ in range(3):
                model(batch)
            conv_ms[name] = min(conv_ms[name], (time.perf_counter() - t0) / 3 * 1e3)
    conv_same_result = torch.allclose(conv_nchw(batch_nchw), conv_cl(batch_cl), atol=1e-4)
conv_nchw_ms, conv_cl_ms = conv_ms["NCHW"], conv_ms["channels_last"]
print(f"3x3 conv, 64->64 channels, batch 8x64x56x56, {torch.get_num_threads()} threads: NCHW {conv_nchw_ms:.1f} ms, "
      f"channels_last {conv_cl_ms:.1f} ms (min of 7 rounds, taking turns); same result: {conv_same_result}")

# clone() keeps the layout too: its default memory_format, torch.preserve_format, copies the
# strides of a dense input as they are, so it is not contiguous().
clone_keeps_cl = cl.clone().stride() == cl.stride()
xt = torch.rand(3, 4).t()
clone_keeps_transpose = xt.clone().stride() == xt.stride() != xt.contiguous().stride()
print(f"cl.clone() keeps channels_last strides: {clone_keeps_cl}; a transpose's clone() keeps "
      f"its strides {xt.clone().stride()}, contiguous() gives {xt.contiguous().stride()}: {clone_keeps_transpose}")

# The function in c10/core/MemoryFormat.h that computes these strides: its 4-d case, read from
# the shipped header and evaluated statement by statement.
memory_format_h = os.path.join(os.path.dirname(torch.__file__), "include", "c10", "core", "MemoryFormat.h")
with open(memory_format_h, encoding="utf-8") as f:
    header_text = f.read()
body = header_text[header_text.index("get_channels_last_strides_2d(ArrayRef<T> sizes)"):]
case4 = body[body.index("case 4:"):body.index("return strides;")]
assignments = re.findall(r"strides\[(\d)\] = ([^;]+);", case4)
if len(assignments) != 4:
    raise RuntimeError(f"get_channels_last_strides_2d's 4-d case has changed: {case4!r}")


def header_strides(sizes):
    """Strides as the header's assignments compute them, in the header's order."""
    strides = [None] * 4
    for index, expression in assignments:
        value = 1
        for factor in expression.split("*"):
            factor = factor.strip()
            ref = re.fullmatch(r"(strides|sizes)\[(\d)\]", factor)
            value *= int(factor) if ref is None else (strides if ref[1] == "strides" else sizes)[int(ref[2])]
        strides[int(index)] = value
    return tuple(strides)


other_shape = (2, 5, 4, 3)
header_formula_matches = (header_strides(tuple(x.shape)) == cl.stride() and header_strides(other_shape)
                          == torch.empty(other_shape, memory_format=torch.channels_last).stride())
print("get_channels_last_strides_2d, case 4 (c10/core/MemoryFormat.h): "
      + "; ".join(f"strides[{i}] = {e}" for i, e in assignments))
print(f"  gives {header_strides(tuple(x.shape))} for {tuple(x.shape)} and {header_strides(other_shape)} for "
      f"{other_shape}, PyTorch's own strides: {header_formula_matches}")

# Figure: each storage drawn as a row of cells in address order, coloured by channel,
# labelled with the pixel (row, column) it holds.
fig, ax = plt.subplots(figsize=(8, 3.2))
for row, (name, order) in enumerate(orders.items()):
    y = -row * 1.6
    ax.text(-0.3, y + 0.45, name, ha="right", va="center", fontsize=10)
    for cell, (c, h, w) in enumerate(order):
        ax.add_patch(Rectangle((cell, y), 0.92, 0.9, color=f"C{c}", alpha=0.55))
        ax.text(cell + 0.46, y + 0.45, f"{h},{w}", ha="center", va="center", fontsize=8)
    ax.text(0, y - 0.3, f"strides {(x if row == 0 else cl).stride()}", fontsize=8, va="center")
for c in range(C):
    ax.add_patch(Rectangle((19 + 0, -0.2 - c * 0.7), 0.5, 0.5, color=f"C{c}", alpha=0.55))
    ax.text(19.7, 0.05 - c * 0.7, f"channel {c}", va="center", fontsize=9)
ax.text(N * C * H * W / 2, 1.3, "storage address →  (cell label: pixel row, column)",
        ha="center", fontsize=9)
ax.set_xlim(-7.5, 22.5)
ax.set_ylim(-2.2, 1.6)
ax.axis("off")
ax.set_title("Same shape (1, 3, 2, 3), two reading orders of the storage")
fig.tight_layout()
plt.show()

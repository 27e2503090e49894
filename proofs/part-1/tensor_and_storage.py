"""Three tensors, one storage: each view is its own small TensorImpl, all pointing at one StorageImpl of bytes.

A 3x4 float32 tensor x and two views of it, x.t() and x[1], are drawn as what printing them
shows (a grid of values) and as the objects they are: a Python object per tensor, each holding
a TensorImpl (its sizes, strides, offset, dtype), one version counter and one StorageImpl
(the data pointer, the size in bytes) that all three point at. The grids, sizes, strides,
offsets, byte counts, the counter's value and the number of TensorImpls are read from the live
tensors; the boxes' names and the words "allocator (CPU)" are labels. A write through x then
shows that the three share the counter. The TensorImpls are told apart by the private attribute `_cdata` (the address of
each one), the StorageImpl by `untyped_storage()._cdata`, and named in the order they appear. The proof then counts the
references to the storage with the private `torch._C._storage_Use_Count` as views are made
and dropped, shows that a view's metadata is its own (transposing the view in place leaves
x alone) and that an operation returning an existing tensor returns the same Python
object. Last, it reads the installed C++ headers for what the aside on the page cites: the
size bound on TensorImpl (c10/core/TensorImpl.h), the inline room for sizes and strides
(c10/core/impl/SizesAndStrides.h), the reference counts (c10/util/intrusive_ptr.h) and the
Python object THPVariable (torch/csrc/autograd/python_variable.h). A missing private API or
header raises.
"""
import gc
import os
import re
import sys
import weakref

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyBboxPatch

INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")


def header(path):
    """Text of one C++ header shipped inside the torch package."""
    with open(os.path.join(INCLUDE, path), encoding="utf-8") as f:
        return f.read()


def storage_refs(t):
    """Strong references to t's StorageImpl (private API; raises if it is gone)."""
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
tensors = {"x": x, "x.t()": x.t(), "x[1]": x[1]}
grids = {name: t.tolist() for name, t in tensors.items()}  # what printing each one shows, before any write
version_before = x._version
# Addresses differ from run to run: name each distinct object by the order it first appears.
impl_names, storage_names = {}, {}
for name, t in tensors.items():
    impl = impl_names.setdefault(t._cdata, f"TensorImpl {len(impl_names) + 1}")
    storage = storage_names.setdefault(t.untyped_storage()._cdata, f"StorageImpl {len(storage_names) + 1}")
    print(f"{name:<6} {impl}: size {tuple(t.shape)}, stride {t.stride()}, offset {t.storage_offset()}; {storage}")
impls = {t._cdata for t in tensors.values()}
storages = {t.untyped_storage()._cdata for t in tensors.values()}
three_impls_one_storage = len(impls) == 3 and len(storages) == 1
storage_bytes = x.untyped_storage().nbytes()
row_offset_bytes = tensors["x[1]"].data_ptr() - x.untyped_storage().data_ptr()
offset_in_bytes = all(t.data_ptr() - t.untyped_storage().data_ptr() == t.storage_offset() * t.element_size()
                      for t in tensors.values())
python_object_bytes = sys.getsizeof(x)
print(f"three TensorImpls over one StorageImpl of {storage_bytes} bytes: {three_impls_one_storage}")
print(f"data_ptr() = storage address + storage_offset() x element size, for all three: {offset_in_bytes}")

# A view's metadata is its own: transposing the view in place changes its strides, not x's.
v = x.t()
v.t_()
own_metadata = v.stride() == (4, 1) and x.t().stride() == (1, 4) and x.stride() == (4, 1)
print(f"x.t().t_() changed the view's strides and left x's alone: {own_metadata}")

# References to the storage: one per tensor that points at it.
big = torch.zeros(100, 10)
refs = [("big = torch.zeros(100, 10)", storage_refs(big))]
row = big[3]
refs.append(("row = big[3]", storage_refs(big)))
col = big[:, 0]
refs.append(("col = big[:, 0]", storage_refs(big)))
flat = big.view(-1)
refs.append(("flat = big.view(-1)", storage_refs(big)))
del row
refs.append(("del row", storage_refs(big)))
refs_one_tensor, refs_three_views, refs_after_del = refs[0][1], refs[3][1], refs[4][1]
one_ref_per_view = refs_three_views - refs_one_tensor == 3 and refs_after_del == refs_three_views - 1
print("references to the storage after each line:")
for line, n in refs:
    print(f"  {line:<28}{n}")
# Why the count starts at 2: asking for untyped_storage() made a Python storage object, which
# holds a reference of its own. With the tensor gone and that object kept, one is left.
y = torch.zeros(10)
y_storage = y.untyped_storage()
refs_tensor_and_object = torch._C._storage_Use_Count(y_storage._cdata)
del y
gc.collect()
refs_storage_object_alone = torch._C._storage_Use_Count(y_storage._cdata)
del y_storage
# PyTorch keeps that Python object alive while C++ holds the storage, and hands it out again.
storage_weakref = weakref.ref(big.untyped_storage())
gc.collect()
storage_pyobject_kept = storage_weakref() is not None and storage_weakref() is big.untyped_storage()
print(f"a tensor and its Python storage object: {refs_tensor_and_object} references; "
      f"the storage object alone: {refs_storage_object_alone}; it is kept and handed out again: "
      f"{storage_pyobject_kept}")

# The TensorImpl remembers its Python object: an op that returns an existing tensor returns it.
out = torch.empty(3, 4)
same_object_out = torch.add(x, 1, out=out) is out
before_mul = [t._version for t in tensors.values()]
same_object_inplace = x.mul_(2) is x
print(f"torch.add(x, 1, out=out) is out: {same_object_out}; x.mul_(2) is x: {same_object_inplace}")
# The three share one version counter: the write through x moved the views' counters too.
views_share_counter = all(t._version == v + 1 for t, v in zip(tensors.values(), before_mul))
print(f"x.mul_(2) moved the version of x, x.t() and x[1] from {before_mul} to "
      f"{[t._version for t in tensors.values()]}: one shared counter: {views_share_counter}")

# What the headers say about these objects.
impl_h = header("c10/core/TensorImpl.h")
tsizes = re.findall(r"constexpr size_t tsize = (\d+) \* sizeof\(int64_t\)", impl_h)
tensorimpl_max_bytes = int(tsizes[-1]) * 8  # the 64-bit branch comes second
inline_dims = int(re.search(r"#define C10_SIZES_AND_STRIDES_MAX_INLINE_SIZE (\d+)",
                            header("c10/core/impl/SizesAndStrides.h"))[1])
refcount_h = header("c10/util/intrusive_ptr.h")
# One 64-bit word holds both counts: refcount() reads its low 32 bits, weakcount() the next 31.
one_word_two_counts = ("std::atomic<uint64_t> combined_refcount_;" in refcount_h
                       and "return static_cast<uint32_t>(combined_refcount);" in refcount_h
                       and "return static_cast<uint32_t>((combined_refcount & ~kHasPyObject) >> 32);" in refcount_h)
impl_is_refcounted = "struct C10_API TensorImpl : public c10::intrusive_ptr_target" in impl_h
storage_is_refcounted = ("struct C10_API StorageImpl : public c10::intrusive_ptr_target"
                         in header("c10/core/StorageImpl.h"))
thpvariable_holds_tensor = re.search(r"struct THPVariable \{\s*PyObject_HEAD\s*//[^\n]*\n\s*at::Tensor cdata;",
                                     header("torch/csrc/autograd/python_variable.h")) is not None
print(f"sizeof(TensorImpl) <= {tensorimpl_max_bytes} bytes on 64-bit (static_assert in TensorImpl.h); "
      f"sizes and strides inline up to {inline_dims} dims (SizesAndStrides.h)")
print(f"TensorImpl and StorageImpl derive from intrusive_ptr_target: {impl_is_refcounted and storage_is_refcounted}; "
      f"strong and weak counts share one 64-bit word: {one_word_two_counts}")
print(f"THPVariable's payload is an at::Tensor named cdata (python_variable.h): {thpvariable_holds_tensor}; "
      f"the Python object takes {python_object_bytes} bytes (sys.getsizeof)")

# Figure: what Python shows (the grids), the objects behind it, and the bytes.
fig, ax = plt.subplots(figsize=(9.6, 4.9))
ax.set_xlim(0, 12.4)
ax.set_ylim(-0.1, 6.5)
ax.axis("off")


def box(x0, y0, w, h, title, lines, color, size=9):
    ax.add_patch(FancyBboxPatch((x0, y0), w, h, boxstyle="round,pad=0.04", facecolor=color, alpha=0.18,
                                edgecolor=color, linewidth=1.2))
    ax.text(x0 + 0.1, y0 + h - 0.1, title, va="top", fontsize=size, fontweight="bold")
    for k, line in enumerate(lines):
        ax.text(x0 + 0.1, y0 + h - 0.42 - 0.27 * k, line, va="top", fontsize=size - 0.5, family="monospace")


def arrow(x0, y0, x1, y1, style="-"):
    ax.annotate("", (x1, y1), (x0, y0), arrowprops={"arrowstyle": "->", "lw": 1.0, "color": "C7", "ls": style})


CELL = 0.3
impl_boxes = []
for k, (name, t) in enumerate(tensors.items()):
    top = 6.3 - 2.1 * k
    values = grids[name]
    rows = values if isinstance(values[0], list) else [values]
    ax.text(0.1, top, f"{name} in Python", fontsize=9, fontweight="bold", va="bottom")
    for i, row_values in enumerate(rows):  # the logical grid: what printing the tensor shows
        for j, v in enumerate(row_values):
            ax.add_patch(plt.Rectangle((0.1 + j * CELL, top - (i + 1) * CELL - 0.05), CELL * 0.92, CELL * 0.92,
                                       facecolor="C0", alpha=0.2, edgecolor="C0"))
            ax.text(0.1 + j * CELL + CELL * 0.46, top - (i + 0.5) * CELL - 0.05, f"{v:g}", ha="center",
                    va="center", fontsize=8)
    box(1.75, top - 1.0, 1.45, 0.85, "THPVariable", ["cdata ->"], "C0")
    box(3.55, top - 1.75, 2.75, 1.6, f"TensorImpl {k + 1}",
        [f"sizes   {tuple(t.shape)}", f"strides {t.stride()}", f"offset  {t.storage_offset()}",
         f"dtype   {str(t.dtype).removeprefix('torch.')}"], "C1")
    arrow(3.22, top - 0.6, 3.52, top - 0.6)
    impl_boxes.append(top)
# One version counter and one StorageImpl, reached from all three TensorImpls.
box(7.3, 5.35, 3.5, 0.95, "version counter (one, shared)", [f"value {version_before}"], "C4")
box(7.3, 2.75, 4.9, 1.85, "StorageImpl (one for all three)",
    ["data_ptr  -> element 0 below", f"nbytes    {storage_bytes}", "allocator (CPU)",
     f"held by   {len(impls)} TensorImpls"], "C2")
for top in impl_boxes:
    arrow(6.35, top - 0.35, 7.25, 5.8, ":")
    arrow(6.35, top - 1.2, 7.25, 3.7)
# The bytes: twelve float32 cells, x[1]'s four darker; data_ptr points at cell 0.
offset = tensors["x[1]"].storage_offset()
for cell in range(12):
    in_row = offset <= cell < offset + 4
    ax.add_patch(plt.Rectangle((7.3 + cell * 0.4, 1.2), 0.37, 0.5, color="C2", alpha=0.7 if in_row else 0.3))
    ax.text(7.3 + cell * 0.4 + 0.185, 1.45, str(cell), ha="center", va="center", fontsize=8)
arrow(7.49, 2.7, 7.49, 1.75)
ax.text(7.3, 0.95, f"the storage, {storage_bytes} bytes, in order. x[1] (darker) starts at\n"
        f"element {offset}: data_ptr + {offset} x 4 = {row_offset_bytes} bytes in", fontsize=8.5, va="top")
ax.set_title("x = torch.arange(12.).reshape(3, 4), x.t() and x[1]: three TensorImpls, one StorageImpl",
             fontsize=10.5)
fig.tight_layout()
plt.show()

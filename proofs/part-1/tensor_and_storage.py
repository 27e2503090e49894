"""Three tensors, one storage: each view is its own small TensorImpl, all pointing at one StorageImpl of bytes.

A 3x4 float32 tensor x and two views of it, x.t() and x[1], are drawn as the objects they
are: a Python object per tensor, each holding a TensorImpl (its sizes, strides, offset,
dtype, device, version), and one StorageImpl (the data pointer, the size in bytes, the
allocator) that all three point at. The values in the drawing are read from the live
tensors. The TensorImpls are told apart by the private attribute `_cdata` (the address of
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
same_object_inplace = x.mul_(2) is x
print(f"torch.add(x, 1, out=out) is out: {same_object_out}; x.mul_(2) is x: {same_object_inplace}")

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

# Figure: the objects, with the live values.
fig, ax = plt.subplots(figsize=(8.6, 4.6))
ax.set_xlim(0, 10.6)
ax.set_ylim(-0.3, 6.3)
ax.axis("off")


def box(x0, y0, w, h, title, lines, color):
    ax.add_patch(FancyBboxPatch((x0, y0), w, h, boxstyle="round,pad=0.04", facecolor=color, alpha=0.18,
                                edgecolor=color, linewidth=1.2))
    ax.text(x0 + 0.1, y0 + h - 0.12, title, va="top", fontsize=8.5, fontweight="bold")
    for k, line in enumerate(lines):
        ax.text(x0 + 0.1, y0 + h - 0.4 - 0.235 * k, line, va="top", fontsize=7.5, family="monospace")


def arrow(x0, y0, x1, y1):
    ax.annotate("", (x1, y1), (x0, y0), arrowprops={"arrowstyle": "->", "lw": 1.0, "color": "C7"})


rows = list(tensors.items())
for k, (name, t) in enumerate(rows):
    top = 5.9 - 2.05 * k
    box(0.05, top - 0.9, 1.75, 0.9, f"Python: {name}", ["THPVariable", "cdata ->"], "C0")
    box(2.45, top - 1.85, 3.35, 1.85, f"TensorImpl {k + 1}",
        [f"sizes   {tuple(t.shape)}", f"strides {t.stride()}", f"offset  {t.storage_offset()}",
         f"dtype   {str(t.dtype).removeprefix('torch.')}", f"device  {t.device}", "version -> one shared counter"],
        "C1")
    arrow(1.85, top - 0.45, 2.42, top - 0.45)
    arrow(5.85, top - 0.9, 6.6, 3.2)
box(6.65, 2.05, 3.85, 1.9, "StorageImpl (one for all three)",
    ["data_ptr  -> the bytes below", f"nbytes    {storage_bytes}", "allocator DefaultCPUAllocator",
     f"held by {len(rows)} TensorImpls"], "C2")
# The bytes: twelve floats in a row, x[1]'s first element marked.
for cell in range(12):
    in_row = tensors["x[1]"].storage_offset() <= cell < tensors["x[1]"].storage_offset() + 4
    ax.add_patch(plt.Rectangle((6.65 + cell * 0.32, 0.7), 0.29, 0.5, color="C2", alpha=0.7 if in_row else 0.3))
    ax.text(6.65 + cell * 0.32 + 0.145, 0.95, str(cell), ha="center", va="center", fontsize=7)
arrow(8.0, 2.0, 8.0, 1.25)
ax.text(6.65, 0.45, f"{storage_bytes} bytes: x[1] starts at element {tensors['x[1]'].storage_offset()}, "
        f"{row_offset_bytes} bytes in (darker)", fontsize=7.5, va="top")
ax.set_title("x = torch.arange(12.).reshape(3, 4) and two views: three TensorImpls, one StorageImpl", fontsize=10)
fig.tight_layout()
plt.show()

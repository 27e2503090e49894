"""A tensor is a small C++ object (TensorImpl) pointing at a shared block of bytes (StorageImpl).

The proof makes a 100x10 float32 tensor and three views of it, then prints, for each, the
TensorImpl (told apart by the private `_cdata` attribute, its address), its StorageImpl
(`untyped_storage()._cdata`) and where its first element sits. It counts the references to the
storage with the private `torch._C._storage_Use_Count` as views are made and dropped, shows
that PyTorch hands back the same Python object when an operation returns a tensor that
already has one, and reads the installed C++ headers for the layout of these objects:
the size bound on TensorImpl (c10/core/TensorImpl.h), the inline room for sizes and strides
(c10/core/impl/SizesAndStrides.h), the combined reference count (c10/util/intrusive_ptr.h)
and the Python object THPVariable (torch/csrc/autograd/python_variable.h). A missing private
API or header raises.
"""
import gc
import os
import re
import weakref

import torch

INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")


def header(path):
    """Text of one C++ header shipped inside the torch package."""
    with open(os.path.join(INCLUDE, path), encoding="utf-8") as f:
        return f.read()


def storage_refs(t):
    """Strong references to t's StorageImpl (private API; raises if it is gone)."""
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


x = torch.zeros(100, 10)
refs = [("x = torch.zeros(100, 10)", storage_refs(x))]
row = x[3]
refs.append(("row = x[3]", storage_refs(x)))
xt = x.t()
refs.append(("xt = x.t()", storage_refs(x)))
flat = x.view(-1)
refs.append(("flat = x.view(-1)", storage_refs(x)))
del row
refs.append(("del row", storage_refs(x)))
refs_one_tensor = refs[0][1]
refs_three_views = refs[3][1]
refs_after_del = refs[4][1]
# The Python storage object that untyped_storage() made holds one reference of its own: with
# the only tensor deleted and that object kept, one reference is left.
y = torch.zeros(10)
y_storage = y.untyped_storage()
refs_tensor_and_object = torch._C._storage_Use_Count(y_storage._cdata)
del y
gc.collect()
refs_storage_object_alone = torch._C._storage_Use_Count(y_storage._cdata)
del y_storage
# Once made, PyTorch keeps that object alive for as long as C++ holds the storage, and hands it
# out again: a weak reference, the only one Python holds, still finds it, and it is the object
# handed out.
storage_weakref = weakref.ref(x.untyped_storage())
gc.collect()
storage_pyobject_kept = storage_weakref() is not None and storage_weakref() is x.untyped_storage()

tensors = {"x": x, "xt": xt, "flat": flat, "x[5:]": x[5:]}
# Addresses differ from run to run: name each distinct object by the order it first appears.
impl_names, storage_names = {}, {}
print(f"{'tensor':<7}{'TensorImpl':<12}{'StorageImpl':<13}{'size':<11}{'stride':<9}{'offset':>6}"
      f"  first element, bytes into the storage")
for name, t in tensors.items():
    impl = impl_names.setdefault(t._cdata, f"impl {len(impl_names) + 1}")
    storage = storage_names.setdefault(t.untyped_storage()._cdata, f"storage {len(storage_names) + 1}")
    print(f"{name:<7}{impl:<12}{storage:<13}{str(tuple(t.shape)):<11}{str(t.stride()):<9}"
          f"{t.storage_offset():>6}  {t.data_ptr() - t.untyped_storage().data_ptr()} B")
impls_distinct = len({t._cdata for t in tensors.values()}) == len(tensors)
# Each view's TensorImpl carries its own sizes, strides and offset; x's stay as they were.
layouts = [(tuple(t.shape), t.stride(), t.storage_offset()) for t in tensors.values()]
own_metadata = len(set(layouts)) == len(layouts) and layouts[0] == ((100, 10), (10, 1), 0)
one_storage = len({t.untyped_storage()._cdata for t in tensors.values()}) == 1
# data_ptr() is the storage's address plus storage_offset() elements.
offset_in_bytes = all(t.data_ptr() - t.untyped_storage().data_ptr() == t.storage_offset() * t.element_size()
                      for t in tensors.values())
slice_offset_bytes = tensors["x[5:]"].data_ptr() - x.untyped_storage().data_ptr()
print(f"four TensorImpls, each with its own layout: {impls_distinct and own_metadata}; "
      f"one StorageImpl: {one_storage}")
print(f"data_ptr() = storage address + storage_offset() x element_size(): {offset_in_bytes}")
print("references to the storage after each line:")
for line, n in refs:
    print(f"  {line:<26}{n}")
print(f"a fresh tensor and its Python storage object: {refs_tensor_and_object} references; "
      f"after del of the tensor: {refs_storage_object_alone}")
print(f"the Python storage object is kept and handed out again: {storage_pyobject_kept}")

# The TensorImpl remembers its Python object, so an op that returns an existing
# tensor returns the very same Python object, not a new wrapper.
out = torch.empty(100, 10)
same_object_out = torch.add(x, 1, out=out) is out
same_object_inplace = x.mul_(2) is x
print(f"torch.add(x, 1, out=out) is out: {same_object_out}; x.mul_(2) is x: {same_object_inplace}")

# What the headers say about the layout.
impl_h = header("c10/core/TensorImpl.h")
tsizes = re.findall(r"constexpr size_t tsize = (\d+) \* sizeof\(int64_t\)", impl_h)
tensorimpl_max_bytes = int(tsizes[-1]) * 8  # the 64-bit branch comes second
storage_field_in_impl = "  Storage storage_;" in impl_h
version_counter_in_impl = "c10::VariableVersion version_counter_;" in impl_h
inline_dims = int(re.search(r"#define C10_SIZES_AND_STRIDES_MAX_INLINE_SIZE (\d+)",
                            header("c10/core/impl/SizesAndStrides.h"))[1])
combined_refcount = "std::atomic<uint64_t> combined_refcount_;" in header("c10/util/intrusive_ptr.h")
impl_is_refcounted = "struct C10_API TensorImpl : public c10::intrusive_ptr_target" in impl_h
storage_is_refcounted = ("struct C10_API StorageImpl : public c10::intrusive_ptr_target"
                         in header("c10/core/StorageImpl.h"))
thpvariable_holds_tensor = re.search(r"struct THPVariable \{\s*PyObject_HEAD\s*//[^\n]*\n\s*at::Tensor cdata;",
                                     header("torch/csrc/autograd/python_variable.h")) is not None
print(f"sizeof(TensorImpl) <= {tensorimpl_max_bytes} bytes on 64-bit (static_assert in TensorImpl.h)")
print(f"sizes and strides kept inline up to {inline_dims} dims (SizesAndStrides.h)")
print(f"TensorImpl, StorageImpl derive from intrusive_ptr_target: {impl_is_refcounted}, "
      f"{storage_is_refcounted}")
print(f"one 64-bit atomic holds strong and weak counts (intrusive_ptr.h): {combined_refcount}")
print(f"THPVariable's payload is an at::Tensor named cdata (python_variable.h): "
      f"{thpvariable_holds_tensor}")
print(f"TensorImpl fields storage_ and version_counter_ (TensorImpl.h): "
      f"{storage_field_in_impl}, {version_counter_in_impl}")

"""Wrapping a result: a tensor keeps one Python object for life, and C++ keeps that object alive while it holds the tensor.

THPVariable_Wrap (torch/csrc/autograd/python_variable.h) turns the at::Tensor a binding
returns into a Python object. The script checks what it returns: the very same object for an
in-place call and for out= (compared with `is`), a new one for a fresh result. Then it reads
the 64-bit reference count word every TensorImpl carries (c10/util/intrusive_ptr.h: after the
object's vtable pointer, the strong count in the low 32 bits, the weak count above it, and
bit 63, kHasPyObject, set while a Python object exists for it), with ctypes at the address
Tensor._cdata gives (a private attribute: the TensorImpl's address), as C++ takes and drops
references. Last, it gives a tensor to C++ alone (as another tensor's .grad), deletes every
Python name for it, and asks for it back: the same Python object returns, with an attribute
set on it earlier. CPython and 64-bit little-endian machines only (the word is read raw).
"""
import ctypes
import gc
import sys

import torch

HAS_PYOBJECT = 1 << 63


def refcount_word(t):
    """(strong count, weak count, has a Python object) of the tensor's TensorImpl."""
    word = ctypes.c_uint64.from_address(t._cdata + 8).value  # _cdata: private, the TensorImpl*
    return word & 0xFFFFFFFF, (word & ~HAS_PYOBJECT) >> 32, bool(word & HAS_PYOBJECT)


if sys.byteorder != "little" or ctypes.sizeof(ctypes.c_void_p) != 8:
    raise SystemExit("this script reads a 64-bit little-endian reference count")
torch.manual_seed(0)
a, b, c = torch.randn(3), torch.randn(3), torch.empty(3)

inplace_returns_self = a.add_(b) is a
out_returns_out = torch.add(a, b, out=c) is c
fresh_is_new = torch.add(a, b) is not torch.add(a, b)
view_base_is_a = a[1:]._base is a

g = torch.ones(3)
strong_alone, weak_alone, has_py_alone = refcount_word(g)
x = torch.zeros(3, requires_grad=True)
x.grad = g                                          # now C++ (x's autograd data) holds g too
strong_held, _, has_py_held = refcount_word(g)
g.note = "set from Python"
gid = id(g)
del g                                               # no Python name refers to it any more
gc.collect()
back = x.grad
same_object_back = id(back) == gid
attribute_survived = getattr(back, "note", None) == "set from Python"
x.grad = None
strong_after_release, _, _ = refcount_word(back)

print(f"a.add_(b) is a: {inplace_returns_self}; torch.add(a, b, out=c) is c: {out_returns_out};"
      f" two torch.add(a, b) give two objects: {fresh_is_new}; a[1:]._base is a: {view_base_is_a}")
print(f"g = torch.ones(3): TensorImpl strong count {strong_alone}, weak {weak_alone}, "
      f"kHasPyObject {has_py_alone}")
print(f"after x.grad = g: strong count {strong_held} (the Python object, and x's autograd data)")
print(f"del g; x.grad is the same Python object: {same_object_back}; "
      f"its attribute survived: {attribute_survived}")
print(f"after x.grad = None: strong count {strong_after_release}")

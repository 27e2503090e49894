"""Wrapping a result: a tensor keeps one Python object for life, and C++ keeps that object alive while it holds the tensor.

THPVariable_Wrap (torch/csrc/autograd/python_variable.h) turns the at::Tensor a binding
returns into a Python object. The script checks what it returns: the very same object for an
in-place call and for out= (compared with `is`), a new one for a fresh result. Then it reads
the 64-bit reference count word every TensorImpl carries (c10/util/intrusive_ptr.h: after the
object's vtable pointer, the strong count in the low 32 bits, the weak count above it, and
bit 63, kHasPyObject, set while a Python object exists for it), with ctypes at the address
Tensor._cdata gives (a private attribute: the TensorImpl's address), as C++ takes and drops
references, and the Python object's own reference count (sys.getrefcount), which rises by one
when C++ takes a second reference to the TensorImpl. Last, it gives a tensor to C++ alone (as another tensor's .grad), deletes every
Python name for it, and asks for it back: the same Python object returns, with an attribute
set on it earlier (a weak reference to the object, which does not keep it alive, tells that it
is the same one). The figure draws the two objects and the word as read. CPython and 64-bit
little-endian machines only (the word is read raw).
"""
import ctypes
import gc
import sys
import weakref

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyBboxPatch

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
fresh = torch.add(a, b)   # a new TensorImpl: a new Python object, unlike the calls above and a.contiguous()
fresh_is_new = (fresh._cdata not in (a._cdata, b._cdata, c._cdata) and fresh is not a and fresh is not b
                and a.contiguous() is a)   # the same TensorImpl back gives the same object, a new one a new one
view_base_is_a = a[1:]._base is a

g = torch.ones(3)
strong_alone, weak_alone, has_py_alone = refcount_word(g)
py_refs_alone = sys.getrefcount(g) - 1              # references to the Python object (less getrefcount's)
x = torch.zeros(3, requires_grad=True)
x.grad = g                                          # now C++ (x's autograd data) holds g too
strong_held, _, has_py_held = refcount_word(g)
py_refs_held = sys.getrefcount(g) - 1
tensorimpl_increfs_object = py_refs_held == py_refs_alone + 1
g.note = "set from Python"
g_ref = weakref.ref(g)                              # does not keep g alive
del g                                               # no Python name refers to it any more
gc.collect()
alive_without_names = g_ref() is not None
back = x.grad
same_object_back = g_ref() is back
attribute_survived = getattr(back, "note", None) == "set from Python"
x.grad = None
strong_after_release, _, _ = refcount_word(back)

print(f"a.add_(b) is a: {inplace_returns_self}; torch.add(a, b, out=c) is c: {out_returns_out};"
      f" torch.add(a, b) is a new TensorImpl with a new object, while a.contiguous() is a: {fresh_is_new}; a[1:]._base is a: {view_base_is_a}")
print(f"g = torch.ones(3): TensorImpl strong count {strong_alone}, weak {weak_alone}, "
      f"kHasPyObject {has_py_alone}")
print(f"after x.grad = g: strong count {strong_held} (the Python object, and x's autograd data); references "
      f"to the Python object {py_refs_alone} -> {py_refs_held}: the TensorImpl took one")
print(f"del g; the object is still alive (a weak reference to it): {alive_without_names}; x.grad is that "
      f"same object: {same_object_back}; its attribute survived: {attribute_survived}")
print(f"after x.grad = None: strong count {strong_after_release}")


# The figure: the Python object and its TensorImpl, alone and while C++ holds the tensor too.
fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2), layout="constrained")
STATES = [("g = torch.ones(3)", strong_alone, has_py_alone, False),
          ("x.grad = g; del g", strong_held, has_py_held, True)]
for ax, (title, strong, has_py, held) in zip(axes, STATES):
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    boxes = [(0.02, 0.55, "Python object\n(torch.Tensor)" + ("\nno name refers to it" if held else "\nnamed g"), "C0"),
             (0.6, 0.55, f"TensorImpl\nstrong count {strong}\nPython object: {has_py}", "C1"),
             (0.6, 0.06, "x's autograd data\n(C++): .grad", "C2")]
    for bx, by, text, colour in boxes[:3 if held else 2]:
        ax.add_patch(FancyBboxPatch((bx, by), 0.38, 0.33, boxstyle="round,pad=0.02", facecolor=colour,
                                    alpha=0.22, edgecolor=colour))
        ax.text(bx + 0.19, by + 0.165, text, ha="center", va="center", fontsize=8)
    ax.annotate("", (0.58, 0.8), (0.42, 0.8), arrowprops={"arrowstyle": "->"})
    ax.text(0.5, 0.83, "owns", ha="center", fontsize=7)
    ax.annotate("", (0.42, 0.62), (0.58, 0.62), arrowprops={"arrowstyle": "->", "ls": "-" if held else "--"})
    ax.text(0.5, 0.5, "PyObjectSlot\n" + ("keeps it alive" if held else "points back"), ha="center",
            fontsize=7, va="center")
    if held:
        ax.annotate("", (0.79, 0.55), (0.79, 0.41), arrowprops={"arrowstyle": "->"})
        ax.text(0.81, 0.47, "holds", fontsize=7)
    ax.set_title(title, fontsize=9, family="monospace")
fig.suptitle("One Python object per tensor; C++ keeps it alive while it holds the tensor", fontsize=10)
fig.add_artist(plt.Line2D([0.5, 0.5], [0.04, 0.86], color="C7", lw=1, ls="--"))   # before | after
plt.show()

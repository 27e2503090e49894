"""From a Python object to the C++ function behind it, and the library that holds it.

A builtin such as torch.add is a small CPython object that points at a PyMethodDef: the
method's name, its flags and the address of its C function. The script reads that address
with ctypes (CPython's object layouts for 64-bit builds: PyCFunctionObject's m_ml at byte 16,
a method or getset descriptor's PyMethodDef or PyGetSetDef at byte 40; it checks each by
reading the name back, and stops if the name does not match). It then finds, in
/proc/self/maps, the file mapped at that address, converts the address to the file's own
virtual address through its PT_LOAD program headers, and looks it up in the file's symbol
table (.symtab, or .dynsym where there is no .symtab), read with struct and numpy. The
mangled name is shortened to its namespaces and name by a few lines of code that follow the
Itanium C++ ABI's nested-name rule. Last, it calls Tensor.__add__ and torch.add with a
string as the other operand: the wrapper turns the binding's TypeError into NotImplemented,
the value that makes Python try the other operand's __radd__. Linux (ELF, /proc) and CPython
only.
"""
import ctypes
import mmap
import os
import re
import struct

import numpy as np
import torch
import torch.nn.functional as F

SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                ("value", "<u8"), ("size", "<u8")])
METH_FLAGS = {0x1: "METH_VARARGS", 0x2: "METH_KEYWORDS", 0x4: "METH_NOARGS", 0x8: "METH_O",
              0x20: "METH_STATIC", 0x80: "METH_FASTCALL"}


def c_function(obj):
    """(C function address, flags or None, kind) of a builtin, a method descriptor or a property."""
    ptr = ctypes.c_void_p.from_address
    if isinstance(obj, type(len)):                              # builtin_function_or_method
        table, get, kind = ptr(id(obj) + 16).value, 8, "builtin"
    elif type(obj).__name__ in ("method_descriptor", "getset_descriptor"):
        table, get, kind = ptr(id(obj) + 40).value, 8, type(obj).__name__
    else:
        raise TypeError(f"{obj!r} is not a C function object")
    name = ctypes.string_at(ptr(table).value).decode()
    if name != obj.__name__:
        raise RuntimeError(f"read {name!r} for {obj.__name__!r}: CPython's object layout differs here")
    flags = ctypes.c_int.from_address(table + 16).value if kind != "getset_descriptor" else None
    return ptr(table + get).value, flags, kind


def mapped_file(address):
    """(path, offset in the file) of the file mapped at `address`, from /proc/self/maps."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi and len(fields) >= 6:
                return fields[5], address - lo + int(fields[2], 16)
    raise RuntimeError(f"no file is mapped at {address:#x}")


_symbols = {}


def symbol_at(path, file_offset):
    """The name of the function symbol that starts at this place in the ELF file."""
    if path not in _symbols:
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
        loads = [struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
        loads = [(off, vaddr, filesz) for kind, _, off, vaddr, _, filesz in loads if kind == 1]
        raw = [struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize) for i in range(shnum)]
        names_at = raw[shstrndx][4]
        by_name = {data[names_at + r[0]:data.find(b"\0", names_at + r[0])].decode(): r for r in raw}
        table = by_name.get(".symtab") or by_name[".dynsym"]
        syms = np.frombuffer(data, SYM, table[5] // SYM.itemsize, table[4])
        _symbols[path] = (data, loads, syms, raw[table[6]][4])
    data, loads, syms, strings = _symbols[path]
    vaddr = next(v + file_offset - off for off, v, size in loads if off <= file_offset < off + size)
    hits = np.nonzero((syms["value"] == vaddr) & ((syms["info"] & 0xF) == 2))[0]
    if not len(hits):
        return "?"
    start = strings + int(syms["name"][hits[0]])
    return data[start:data.find(b"\0", start)].decode()


def readable(mangled):
    """'_ZN5torch8autogradL15THPVariable_addEP7_objectS2_S2_' -> 'torch::autograd::THPVariable_add'.

    Nested names (_ZN ... E) are runs of <length><identifier>; of a template's arguments (I ... E)
    only a function's name is kept. Names that are not mangled come back as they are."""
    m = re.match(r"_Z(N[rVKRO]*)?", mangled)
    if not m:
        return mangled
    rest, parts = mangled[m.end():], []
    while True:
        rest = rest.lstrip("L")
        n = re.match(r"\d+", rest)
        if not n:
            break
        parts.append(rest[n.end():n.end() + int(n.group())])
        rest = rest[n.end() + int(n.group()):]
        if not m.group(1):
            break
    if rest.startswith("I"):                        # a template: name its first function argument
        inner = re.search(r"L_ZN.*?L(\d+)([A-Za-z_]\w*)", rest)
        if inner:
            return "::".join(parts) + "<" + inner.group(2)[:int(inner.group(1))] + ">"
        return "::".join(parts) + "<...>"
    return "::".join(parts)


OBJECTS = {
    "torch.add": torch.add,
    "torch.Tensor.add": torch.Tensor.add,
    "torch.Tensor.__add__ (a + b)": torch.Tensor.__add__,
    "torch.Tensor.dim": torch.Tensor.dim,
    "torch.Tensor.shape": torch._C.TensorBase.__dict__["shape"],
    "torch.Tensor.tolist": torch.Tensor.tolist,
    "torch._C._nn.linear (F.linear)": F.linear,
    "torch.is_grad_enabled": torch.is_grad_enabled,
    "torch._C._dispatch_keys": torch._C._dispatch_keys,
}
rows = {}
for label, obj in OBJECTS.items():
    address, flags, kind = c_function(obj)
    path, offset = mapped_file(address)
    name = symbol_at(path, offset)
    shown_flags = " | ".join(v for k, v in METH_FLAGS.items() if flags and flags & k) or "-"
    rows[label] = (readable(name), os.path.basename(path), shown_flags, name)

stub_init = symbol_at(*mapped_file(ctypes.cast(ctypes.PyDLL(torch._C.__file__).PyInit__C,
                                               ctypes.c_void_p).value))
add_function = rows["torch.add"][0]
add_method = rows["torch.Tensor.add"][0]
plus_function = rows["torch.Tensor.__add__ (a + b)"][0]
add_library = rows["torch.add"][1]
add_flags = rows["torch.add"][2]
add_and_method_differ = rows["torch.add"][3] == rows["torch.Tensor.add"][3] and (
    c_function(torch.add)[0] != c_function(torch.Tensor.add)[0])
plus_wraps_add = "TypeError_to_NotImplemented_" in rows["torch.Tensor.__add__ (a + b)"][3] and (
    "THPVariable_add" in rows["torch.Tensor.__add__ (a + b)"][3])
probe = torch.ones(1)
plus_gives_notimplemented = torch.Tensor.__add__(probe, "x") is NotImplemented
try:
    torch.add(probe, "x")
    add_raises_typeerror = False
except TypeError:
    add_raises_typeerror = True
plus_turns_typeerror_into_notimplemented = plus_wraps_add and plus_gives_notimplemented and add_raises_typeerror
pybind_flags = rows["torch._C._dispatch_keys"][2]
linear_function = rows["torch._C._nn.linear (F.linear)"][0]
dispatch_keys_function = rows["torch._C._dispatch_keys"][0]
all_in_torch_python = all(r[1] == "libtorch_python.so" for r in rows.values())

print(f"{'Python object':32s}{'C function (from the symbol table)':66s}{'library':20s}flags")
for label, (name, lib, flags, _) in rows.items():
    print(f"{label:32s}{name:66s}{lib:20s}{flags}")
print(f"torch._C's entry point PyInit__C is in {os.path.basename(torch._C.__file__)}: {stub_init}")
print(f"torch.add and torch.Tensor.add: two functions with one name, at two addresses: "
      f"{add_and_method_differ}")
print(f"a + b calls the method through TypeError_to_NotImplemented_<THPVariable_add>: {plus_wraps_add}")
print(f"torch.add(t, 'x') raises TypeError: {add_raises_typeerror}; "
      f"torch.Tensor.__add__(t, 'x') returns NotImplemented: {plus_gives_notimplemented}")

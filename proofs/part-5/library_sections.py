"""Inside libtorch_cpu: mostly machine code, a full symbol table that is never mapped, and hundreds of start-up functions.

Reads the ELF files of the installed package with Python (struct and numpy, no readelf):
every section's name, size and flags; the program headers' PT_LOAD segments, the parts of
the file the loader maps into memory; and the .init_array section, the list of functions
the loader runs when it maps the library. Its entries are filled in by relocations, so the
script reads .rela.dyn to find the address each entry will hold, and looks the address up in
the symbol table (.symtab) to name the function. GCC names the function that constructs a
source file's global objects _GLOBAL__sub_I_ followed by the file's name (among those
objects are the TORCH_LIBRARY blocks that register operators and kernels); the script counts
those, names the others, and picks out the files a code generator wrote: a generated file is
named after one of the templates the wheel ships with the generators
(torchgen/packaged/ATen/templates for torchgen, torchgen/packaged/autograd/templates for
tools/autograd): the template's own name, its stem with a shard number (VariableType.cpp
writes VariableType_0.cpp to VariableType_9.cpp), or, for RegisterDispatchKey.cpp, a dispatch
key from torchgen's own list in place of "DispatchKey" (RegisterCPU_0.cpp). A hand-written
file whose name also starts with Register is listed apart. The figure draws libtorch_cpu and libtorch_python to scale,
section by section. Linux (ELF) only.
"""
import collections
import os
import re
import struct

import matplotlib.pyplot as plt
import numpy as np
import torch
import torchgen
from torchgen.model import DispatchKey

LIB_DIR = os.path.join(os.path.dirname(torch.__file__), "lib")
SHF_ALLOC, PT_LOAD, R_X86_64_RELATIVE, R_AARCH64_RELATIVE = 0x2, 1, 8, 1027
SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                ("value", "<u8"), ("size", "<u8")])
RELA = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])


def read(path):
    """The file's bytes, its sections {name: (offset, size, flags, address)} and its PT_LOAD bytes."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit("not a 64-bit little-endian ELF file: this script reads Linux libraries")
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
    loaded = 0
    for i in range(phnum):
        p_type, _, _, _, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        loaded += filesz if p_type == PT_LOAD else 0
    raw = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4]
    secs = {}
    for name, kind, flags, addr, offset, size in raw:
        label = data[names_at + name:data.index(b"\0", names_at + name)].decode()
        secs[label] = (offset, size if kind != 8 else 0, flags, addr)  # 8: NOBITS (.bss)
    return data, secs, loaded


def initializers(data, secs):
    """Names of the functions .init_array will hold, via its relocations and .symtab."""
    start, size, _, addr = secs[".init_array"]
    off, n, _, _ = secs[".rela.dyn"]
    rela = np.frombuffer(data, RELA, n // RELA.itemsize, off)
    kinds = rela["info"] & 0xFFFFFFFF
    inside = (rela["offset"] >= addr) & (rela["offset"] < addr + size)
    targets = rela["addend"][inside & ((kinds == R_X86_64_RELATIVE) | (kinds == R_AARCH64_RELATIVE))]
    off, n, _, _ = secs[".symtab"]
    syms = np.frombuffer(data, SYM, n // SYM.itemsize, off)
    funcs = syms[(syms["info"] & 0xF) == 2]
    by_address = dict(zip(funcs["value"].tolist(), funcs["name"].tolist()))
    strtab = secs[".strtab"][0]
    names = []
    for target in targets.tolist():
        at = by_address.get(target)
        names.append(data[strtab + at:data.index(b"\0", strtab + at)].decode() if at is not None else "?")
    return size // 8, names


GROUPS = {  # what each section holds, for the figure
    "machine code": (".text", ".plt", ".init", ".fini", ".plt.got", ".plt.sec"),
    "constants, exception and unwind tables": (".rodata", ".gcc_except_table", ".eh_frame",
                                               ".eh_frame_hdr"),
    "for the dynamic loader (.dynsym, .dynstr, relocations...)": (
        ".dynsym", ".dynstr", ".gnu.hash", ".gnu.version", ".gnu.version_d", ".gnu.version_r",
        ".rela.dyn", ".rela.plt"),
    "writable data": (".data", ".data.rel.ro", ".data.rel.ro.local", ".got", ".got.plt",
                      ".tdata", ".init_array", ".fini_array", ".dynamic"),
}
def dynamic_tags(data, secs):
    """The tags of the .dynamic section's entries (each a 64-bit tag and a 64-bit value)."""
    offset, size, _, _ = secs[".dynamic"]
    return {struct.unpack_from("<q", data, offset + i)[0] for i in range(0, size, 16)}




LIBS = ["libtorch_cpu.so", "libtorch_python.so"]
layout, counts = {}, {}
for name in LIBS:
    data, secs, loaded = read(os.path.join(LIB_DIR, name))
    total = len(data)
    parts = collections.OrderedDict((g, 0) for g in GROUPS)
    not_loaded = {s: v[1] for s, v in secs.items() if s and not v[2] & SHF_ALLOC}
    for s, (_, size, flags, _) in secs.items():
        group = next((g for g, members in GROUPS.items() if s in members), None)
        if flags & SHF_ALLOC:
            parts[group or "writable data"] += size
    parts["not loaded: .symtab and .strtab (symbol names)"] = (
        not_loaded.get(".symtab", 0) + not_loaded.get(".strtab", 0))
    parts["not loaded: other"] = sum(not_loaded.values()) - parts[
        "not loaded: .symtab and .strtab (symbol names)"]
    layout[name] = (total, loaded, parts, secs)
    if name == "libtorch_cpu.so":
        n_init, init_names = initializers(data, secs)
        cpu_tags = dynamic_tags(data, secs)
    del data

cpu_total, cpu_loaded, cpu_parts, cpu_secs = layout["libtorch_cpu.so"]
cpu_file_bytes = cpu_total
cpu_loaded_bytes = cpu_loaded
cpu_text_bytes = cpu_secs[".text"][1]
cpu_unloaded_bytes = sum(v[1] for s, v in cpu_secs.items() if s and not v[2] & SHF_ALLOC)
cpu_strtab_bytes = cpu_secs[".strtab"][1]
cpu_text_mib = cpu_text_bytes / 2**20
cpu_file_mib = cpu_file_bytes / 2**20
cpu_loaded_mib = cpu_loaded_bytes / 2**20
cpu_unloaded_mib = cpu_unloaded_bytes / 2**20
cpu_strtab_mib = cpu_strtab_bytes / 2**20
no_debug_info = not any(name.startswith(".debug") for name in cpu_secs)   # a release build, as the wheel
n_static_initializers = n_init
n_named_initializers = sum(n != "?" for n in init_names)
constructor_files = [n[len("_GLOBAL__sub_I_"):] for n in init_names if n.startswith("_GLOBAL__sub_I_")]
n_global_constructors = len(constructor_files)
other_initializers = collections.Counter(n for n in init_names if not n.startswith("_GLOBAL__sub_I_"))
other_initializers_text = ", ".join(n if k == 1 else f"{n} (twice)" if k == 2 else f"{n} ({k} times)"
                                    for n, k in other_initializers.items())

# Which of those files a code generator wrote: their names follow from the templates the wheel
# ships (torchgen/packaged/*/templates): the template's own name, or its stem and a shard number
# (VariableType.cpp -> VariableType_3.cpp), or, for RegisterDispatchKey.cpp and
# DispatchKeyNativeFunctions.cpp, a dispatch key of torchgen's own list in place of "DispatchKey".
TEMPLATES = {}
for generator, folder in (("torchgen", "ATen"), ("tools/autograd", "autograd")):
    for t in os.listdir(os.path.join(os.path.dirname(torchgen.__file__), "packaged", folder, "templates")):
        TEMPLATES[t] = generator
KEYS = {k.name for k in DispatchKey}


def written_from(name):
    """(template, generator) that writes a file of this name, or None."""
    stem, ext = os.path.splitext(name)
    for t, generator in TEMPLATES.items():
        t_stem, t_ext = os.path.splitext(t)
        if ext == t_ext and (stem == t_stem or re.fullmatch(re.escape(t_stem) + r"_\d+", stem)):
            return t, generator
    for t, generator in TEMPLATES.items():
        t_stem, t_ext = os.path.splitext(t)
        if ext == t_ext and "DispatchKey" in t_stem:
            m = re.fullmatch(re.escape(t_stem).replace("DispatchKey", "(\\w+?)") + r"(?:_\d+)?", stem)
            if m and m.group(1) in KEYS:
                return t, generator
    return None


generated = {f: written_from(f) for f in set(constructor_files)}
generated = {f: w for f, w in generated.items() if w}
n_generated_initializers = len(generated)
n_by_torchgen = sum(g == "torchgen" for _, g in generated.values())
n_by_autograd_generators = sum(g == "tools/autograd" for _, g in generated.values())
register_files = sorted(f for f, (t, _) in generated.items() if t.startswith("Register"))
n_register_initializers = len(register_files)
autograd_files = sorted(generated.keys() - set(register_files))
handwritten_register = sorted({f for f in constructor_files if f.startswith("Register")} - set(register_files))
handwritten_register_text = ", ".join(handwritten_register) or "none"
by_template = collections.Counter(t for t, _ in generated.values())
by_template_text = ", ".join(f"{t} {n}" for t, n in sorted(by_template.items(), key=lambda tn: (-tn[1], tn[0])))

DT_INIT, DT_INIT_ARRAY = 12, 25           # the loader runs DT_INIT's function, then DT_INIT_ARRAY's list
has_init_function = DT_INIT in cpu_tags and DT_INIT_ARRAY in cpu_tags
python_init = layout["libtorch_python.so"][3][".init_array"][1] // 8

print(f"libtorch_cpu.so: {cpu_file_bytes:,} bytes on disk")
print(f"  mapped by the loader (PT_LOAD segments): {cpu_loaded_bytes:,} bytes ({cpu_loaded_mib:.0f} MiB)")
print(f"  of which machine code (.text):            {cpu_text_bytes:,} bytes ({cpu_text_mib:.0f} MiB)")
print(f"  never mapped (no SHF_ALLOC flag):         {cpu_unloaded_bytes:,} bytes ({cpu_unloaded_mib:.0f} MiB),"
      f" .strtab alone {cpu_strtab_mib:.0f} MiB")
print(f"  .init_array: {n_static_initializers} start-up functions; named through .rela.dyn and .symtab: "
      f"{n_named_initializers}")
print(f"  {n_global_constructors} of them construct a source file's global objects (_GLOBAL__sub_I_<file>);"
      f" the others: {other_initializers_text}")
print(f"  {n_generated_initializers} of those files were written by a code generator (named after one of "
      f"the templates it ships): {n_by_torchgen} by torchgen, {n_by_autograd_generators} by tools/autograd; "
      f"per template: {by_template_text}")
print(f"  hand-written, with a name starting Register: {handwritten_register_text}")
print(f"  .dynamic has DT_INIT (run first) and DT_INIT_ARRAY (the list): {has_init_function}")
print(f"libtorch_python.so: .init_array holds {python_init} start-up functions")

fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
colors = ["C0", "C1", "C2", "C3", "C7", "C8"]
for row, name in enumerate(LIBS):
    left = 0
    for (group, size), color in zip(layout[name][2].items(), colors):
        ax.barh(row, size / 2**20, left=left, color=color, label=group if row == 0 else None,
                hatch="//" if group.startswith("not loaded") else None, edgecolor="white")
        left += size / 2**20
    ax.text(left + 3, row, f"{layout[name][0] / 2**20:,.0f} MiB", va="center", fontsize=9)
ax.set_yticks(range(len(LIBS)), LIBS)
ax.invert_yaxis()
ax.set_xlabel("MiB on disk, to scale")
ax.set_xlim(0, cpu_file_mib * 1.12)
ax.legend(fontsize=8, loc="lower right", frameon=False)
ax.set_title("The two big libraries to scale, by section (hatched: never mapped)", fontsize=10)
plt.show()

"""`import torch` loads the stub torch/_C, and the stub pulls in the rest through the libraries it needs.

Reads the ELF files of the installed package with Python's struct module (no readelf, no
ldd): for the stub torch/_C*.so and every shared library in torch/lib, the section headers,
then the .dynamic section's DT_NEEDED entries (the libraries the dynamic loader must load
first), DT_RUNPATH (where it looks for them) and DT_SONAME. Following DT_NEEDED from the stub
inside torch/lib gives the libraries the loader brings in. Then it reads /proc/self/maps, the
files mapped into this process, which has imported torch, and compares: what torch/lib
mapped is that closure plus libtorch_global_deps, which torch/__init__.py opens itself with
ctypes before it imports torch._C. Linux (ELF) only; on macOS or Windows the libraries are
Mach-O or PE files and the script stops with a message.
"""
import glob
import os
import struct

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import FancyArrowPatch, Rectangle

TORCH_DIR = os.path.dirname(torch.__file__)
LIB_DIR = os.path.join(TORCH_DIR, "lib")
DT_NEEDED, DT_SONAME, DT_RUNPATH = 1, 14, 29


def sections(data):
    """{name: (file offset, size, sh_link)} of a 64-bit little-endian ELF file's sections."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit("not a 64-bit little-endian ELF file: this script reads Linux libraries")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4]
    out = {}
    for name, _, _, _, offset, size, link, _ in raw:
        end = data.index(b"\0", names_at + name)
        out[data[names_at + name:end].decode()] = (offset, size, raw[link][4])  # link: its string table
    return out


def dynamic(path):
    """(DT_NEEDED names, DT_RUNPATH, DT_SONAME) of one ELF file, read from its .dynamic section."""
    with open(path, "rb") as f:
        data = f.read()
    offset, size, strings = sections(data)[".dynamic"]
    needed, runpath, soname = [], None, None
    for at in range(offset, offset + size, 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == 0:
            break
        text = data[strings + value:data.index(b"\0", strings + value)].decode() if tag in (
            DT_NEEDED, DT_SONAME, DT_RUNPATH) else None
        if tag == DT_NEEDED:
            needed.append(text)
        elif tag == DT_RUNPATH:
            runpath = text
        elif tag == DT_SONAME:
            soname = text
    return needed, runpath, soname


stub = torch._C.__file__
files = {os.path.basename(p): p for p in glob.glob(os.path.join(LIB_DIR, "*.so*"))}
files[os.path.basename(stub)] = stub
info = {name: dynamic(path) for name, path in files.items()}
size = {name: os.path.getsize(path) for name, path in files.items()}

# Follow DT_NEEDED from the stub, inside torch/lib (the RUNPATHs say $ORIGIN and $ORIGIN/lib).
stub_name = os.path.basename(stub)
closure, todo = [], [stub_name]
while todo:
    name = todo.pop(0)
    if name in closure:
        continue
    closure.append(name)
    todo += [n for n in info[name][0] if n in files]
system_needed = sorted({n for name in closure for n in info[name][0] if n not in files})

mapped = set()
with open("/proc/self/maps") as f:
    for line in f:
        fields = line.split()
        if len(fields) >= 6 and os.path.dirname(fields[5]) in (LIB_DIR, TORCH_DIR):
            mapped.add(os.path.basename(fields[5]))
mapped_torch_lib = sorted(n for n in mapped if n in files)
unloaded = sorted(set(files) - mapped)
n_unloaded = len(unloaded)
unloaded_text = ", ".join(unloaded)

stub_torch_needs = [n for n in info[stub_name][0] if n in files]
n_stub_torch_needs = len(stub_torch_needs)
stub_needs_text = ", ".join(stub_torch_needs)
stub_runpath = info[stub_name][1]
closure_text = ", ".join(closure[1:])       # the stub left out
n_closure = len(closure) - 1
loaded_is_closure_plus_global_deps = set(mapped_torch_lib) == set(closure) | {"libtorch_global_deps.so"}
n_loaded = len(mapped_torch_lib)
n_in_torch_lib = len(files) - 1
libtorch_bytes = size.get("libtorch.so", 0)
libtorch_needs = ", ".join(n for n in info.get("libtorch.so", ([], None, None))[0] if n in files)
cpu_needs_gomp = "libgomp.so.1" in info["libtorch_cpu.so"][0]
stub_bytes = size[stub_name]

print("DT_NEEDED inside torch (read from each file's .dynamic section):")
for name in closure:
    inside = [n for n in info[name][0] if n in files]
    outside = [n for n in info[name][0] if n not in files]
    print(f"  {name:38s} {size[name]:>12,} B  needs {', '.join(inside) or '-'}"
          f"  (+{len(outside)} system)  RUNPATH {info[name][1]}")
print(f"system libraries they need: {', '.join(system_needed)}")
print(f"torch/lib libraries mapped in this process: {', '.join(mapped_torch_lib)}")
print(f"= the stub's DT_NEEDED closure plus libtorch_global_deps.so: {loaded_is_closure_plus_global_deps}")
print(f"libtorch_global_deps.so needs: {', '.join(info['libtorch_global_deps.so'][0])}")
print(f"in torch/lib but not loaded by import torch: {', '.join(unloaded)}")

# Figure: each library a square whose area is its size on disk, placed by depth of the graph.
depth = {stub_name: 0, "libtorch_global_deps.so": 0}
for name in closure:
    for n in info[name][0]:
        if n in files:
            depth[n] = max(depth.get(n, 0), depth[name] + 1)
rows = {}
for name in list(closure) + ["libtorch_global_deps.so"]:
    rows.setdefault(depth[name], []).append(name)
scale = 2.0 / max(size.values()) ** 0.5
pos = {}
fig, ax = plt.subplots(figsize=(8, 6.2), layout="constrained")
for d, names in rows.items():
    names.sort(key=lambda n: -size[n])
    for i, name in enumerate(names):
        side = max(size[name] ** 0.5 * scale, 0.03)
        x, y = 1.5 + i * 3.6, -d * 1.9
        pos[name] = (x, y, side)
        ax.add_patch(Rectangle((x - side / 2, y - side / 2), side, side, color=f"C{d}", alpha=0.8))
        kib = size[name] / 1024
        shown = "torch/_C (the stub)" if name == stub_name else name
        label = f"{shown}\n{kib / 1024:,.0f} MiB" if kib > 1024 else f"{shown}\n{kib:,.1f} KiB"
        ax.text(x + max(side / 2, 0.05) + 0.1, y, label, va="center", fontsize=8)
for name in closure + ["libtorch_global_deps.so"]:
    for n in info[name][0]:
        if n in pos:
            (x0, y0, s0), (x1, y1, s1) = pos[name], pos[n]
            skips = depth[n] - depth[name] > 1        # curve round the rows in between
            bend = 0.0 if not skips else (0.45 if x1 <= x0 else -0.3)
            ax.add_patch(FancyArrowPatch((x0 - 0.05, y0 - max(s0, 0.1) / 2),
                                         (x1 - 0.05, y1 + max(s1, 0.1) / 2),
                                         connectionstyle=f"arc3,rad={bend}", arrowstyle="->",
                                         mutation_scale=12, color="C7", zorder=0))
gx, gy, gs = pos["libtorch_global_deps.so"]
ax.annotate("opened by torch/__init__.py with ctypes", (gx, gy + 0.1), xytext=(gx, gy + 0.9),
            ha="center", fontsize=8, arrowprops={"arrowstyle": "->"})
bottom = -max(depth.values()) * 1.9
ax.text(0.0, bottom - 1.0, "each also needs system libraries: "
        + ", ".join(s.split(".so")[0] for s in system_needed), fontsize=8)
ax.set_xlim(-0.3, 10.5)
ax.set_ylim(bottom - 1.3, 1.5)
ax.set_aspect("equal")
ax.axis("off")
ax.set_title("What import torch loads: DT_NEEDED from the stub down (area = bytes on disk)")
plt.show()

"""`import torch` loads a stub, torch/_C, and the stub pulls in the rest: the libraries it names as needed, and theirs.

Reads the ELF files of the installed package with Python's struct module (no readelf, no
ldd): for the stub torch/_C*.so and every shared library in torch/lib, the section headers,
then the .dynamic section's DT_NEEDED entries (the libraries the dynamic loader must load
first), DT_RUNPATH (where it looks for them) and DT_SONAME. Following DT_NEEDED from the stub
inside torch/lib gives the libraries the loader brings in. Then it reads /proc/self/maps, the
files mapped into this process, which has imported torch, and compares: what torch/lib
mapped is that closure plus libtorch_global_deps, which torch/__init__.py opens itself with
ctypes before it imports torch._C. It also weighs the machine code (.text) of two libraries
that hold almost none, libtorch and libtorch_global_deps, and checks that no library with one
of torch's names (libtorch*, libc10*, libshm*, libgomp*) came from anywhere else, such as a
torch.libs folder or the system. Linux (ELF) only; on macOS
or Windows the libraries are Mach-O or PE files and the script stops with a message.
"""
import glob
import os
import re
import struct

import torch

TORCH_DIR = os.path.realpath(os.path.dirname(torch.__file__))   # /proc/self/maps names real paths
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


def code_bytes(path):
    """Bytes of machine code (.text) in an ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    return sections(data).get(".text", (0, 0, 0))[1]


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

mapped, mapped_elsewhere = set(), set()
with open("/proc/self/maps") as f:
    for line in f:
        fields = line.split()
        if len(fields) < 6 or ".so" not in fields[5]:
            continue
        if os.path.dirname(fields[5]) in (LIB_DIR, TORCH_DIR):
            mapped.add(os.path.basename(fields[5]))
        elif re.match(r"lib(torch|c10|shm|gomp)", os.path.basename(fields[5])):
            mapped_elsewhere.add(fields[5])                   # one of torch's libraries, from elsewhere
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
torch_libraries_elsewhere = ", ".join(sorted(mapped_elsewhere)) or "none"
loaded_is_closure_plus_global_deps = (set(mapped_torch_lib) == set(closure) | {"libtorch_global_deps.so"}
                                      and not mapped_elsewhere)
n_loaded = len(mapped_torch_lib)
# Some wheels (auditwheel repairs) keep bundled libraries in a torch.libs folder beside torch: not this layout.
libs_all_in_torch_lib = not os.path.isdir(os.path.join(os.path.dirname(TORCH_DIR), "torch.libs"))
n_in_torch_lib = len(files) - 1
libtorch_bytes = size.get("libtorch.so", 0)
libtorch_needs = ", ".join(n for n in info.get("libtorch.so", ([], None, None))[0] if n in files)
cpu_needs_gomp = "libgomp.so.1" in info["libtorch_cpu.so"][0]
stub_bytes = size[stub_name]
stub_kib = stub_bytes / 1024
global_deps_needs = ", ".join(info["libtorch_global_deps.so"][0])
global_deps_code_bytes = code_bytes(files["libtorch_global_deps.so"])
libtorch_code_bytes = code_bytes(files["libtorch.so"])


print("DT_NEEDED inside torch (read from each file's .dynamic section):")
for name in closure:
    inside = [n for n in info[name][0] if n in files]
    outside = [n for n in info[name][0] if n not in files]
    print(f"  {name:38s} {size[name]:>12,} B  needs {', '.join(inside) or '-'}"
          f"  (+{len(outside)} system)  RUNPATH {info[name][1]}")
print(f"system libraries they need: {', '.join(system_needed)}")
print(f"torch/lib libraries mapped in this process: {', '.join(mapped_torch_lib)}")
print(f"= the stub's DT_NEEDED closure plus libtorch_global_deps.so: {loaded_is_closure_plus_global_deps}")
print(f"libtorch_global_deps.so needs: {global_deps_needs}; its machine code (.text): "
      f"{global_deps_code_bytes:,} bytes; libtorch.so's: {libtorch_code_bytes:,} bytes")
print(f"libraries of torch's names (libtorch*, libc10*, libshm*, libgomp*) mapped from anywhere else: "
      f"{torch_libraries_elsewhere}")
print(f"in torch/lib but not loaded by import torch: {', '.join(unloaded)}")

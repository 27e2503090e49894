"""Rows shorter than two vectors run the scalar loop; the step is that of the build that runs.

cpu_kernel_vec (ATen/native/cpu/Loops.h) hands each row of the iteration to
vectorized_loop, which takes 2 * Vectorized<T>::size() elements per step and leaves the rest
of the row to basic_loop, one element at a time. Which Vectorized<T> that is depends on the
build of the kernel that runs: DispatchStub keeps one function pointer per CPU capability
for each kernel, and on an AVX512 CPU falls back to the AVX2 build where the AVX512 pointer
is empty (DispatchStub.cpp, choose_cpu_impl). On Linux the script reads those pointers from
libtorch_cpu's dynamic symbol table (a small ELF reader, no tools; ctypes reads each
pointer after the library has loaded) and counts how many kernels have an empty AVX512
pointer; from the pointers of sigmoid_stub and add_stub and the capability in use it
predicts each kernel's build, and from the vector headers torch ships (ATen/cpu/vec/vec512,
vec256, and vec128 for NEON on ARM) its step. Then it times torch.sigmoid and torch.add on
float32 rows of K elements (K = 1..96), about 64K elements in all, the rows spaced apart so
that TensorIterator cannot merge them: one thread, each point the minimum of 9 calls after a
warm-up, the two operators interleaved; the points either side of 16 and 32 are measured
again, minimum of 31 calls. The drop at K is how many times faster per element a row of K
ran than a row of K - 1; the page judges the drop at the step each build predicts, and the
card also prints the knee, the row length from 8 on where the drop is largest (below 8, the
fixed cost of each row makes the time fall whatever the loop). The same sweep runs in a second process (this script again,
which then only sweeps and prints JSON) with another capability forced through
ATEN_CPU_CAPABILITY: avx2, or default where AVX2 is the capability already. With capability
DEFAULT on x86 the vector class is generic C++ over an array (vec_base.h), which the
compiler may vectorise on its own; this script does not measure that case on a CPU with AVX2.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import ctypes
import json
import mmap
import os
import platform
import re
import struct
import subprocess
import sys
import time

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")
ARM = platform.machine().lower() in ("aarch64", "arm64")
X86 = platform.machine().lower() in ("x86_64", "amd64")
TOTAL = 1 << 16
PAD = 16  # gap between rows: no two rows are adjacent, so no coalescing into one row
KS = list(range(1, 97))
CLOSE = (15, 16, 31, 32)  # measured again, with more calls: the drops the page reads
CHILD = "VECTOR_LOOP_KNEE_SWEEP_ONLY"  # set in the second process: sweep, print JSON, stop
OPS = {"sigmoid": "sigmoid_stub", "add": "add_stub"}


def read_header(rel):
    return open(os.path.join(INCLUDE, *rel.split("/")), encoding="utf-8").read()


def lanes_for(build):
    """(header, Vectorized<float>::size()) for a build, read from the headers torch ships."""
    headers = {"AVX512": "ATen/cpu/vec/vec512/vec512_float.h", "AVX2": "ATen/cpu/vec/vec256/vec256_float.h"}
    if ARM and build == "DEFAULT":
        headers["DEFAULT"] = "ATen/cpu/vec/vec128/vec128_float_neon.h"  # NEON, 128-bit registers
    if build in headers:
        found = re.search(r"size\(\)\s*\{\s*return (\d+);", read_header(headers[build]))
        if found is None:
            raise RuntimeError(f"Vectorized<float>::size() not found in {headers[build]}: the header changed")
        return headers[build], int(found.group(1))
    # the generic class: VECTOR_WIDTH bytes, 32 outside AVX512 and NEON (the last #define)
    widths = re.findall(r"#define VECTOR_WIDTH (\d+)", read_header("ATen/cpu/vec/vec_base.h"))
    if len(widths) != 3:
        raise RuntimeError(f"VECTOR_WIDTH definitions in ATen/cpu/vec/vec_base.h changed: {widths}")
    return "ATen/cpu/vec/vec_base.h", int(widths[-1]) // 4  # bytes per float


def dispatch_pointers():
    """{stub: {capability: pointer set?}} for every DispatchStub in libtorch_cpu (Linux, ELF)."""
    folder = os.path.join(os.path.dirname(torch.__file__), "lib")
    path = os.path.join(folder, next(p for p in os.listdir(folder) if p.startswith("libtorch_cpu.")))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        if m[:4] != b"\x7fELF" or m[4] != 2:  # not a 64-bit ELF file
            return {}
        shoff, = struct.unpack_from("<Q", m, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", m, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", m, shoff + i * shentsize) for i in range(shnum)]
        dynsym = next(s for s in sections if s[1] == 11)  # SHT_DYNSYM
        strtab = sections[dynsym[6]]
        symbols, strings = m[dynsym[4]:dynsym[4] + dynsym[5]], m[strtab[4]:strtab[4] + strtab[5]]
    library = ctypes.CDLL(path)
    tail = re.compile(rb"_DECLARE_DISPATCH_typeEE\d+(\w+?)E$")
    stubs = {}
    for i in range(0, len(symbols), 24):
        start, = struct.unpack_from("<I", symbols, i)
        name = strings[start:strings.find(b"\0", start)]
        hit = tail.search(name) if name.startswith(b"_ZN2at6native12DispatchStub") else None
        if hit is None:
            continue
        # the stub's name is the mangled identifier <length><name>_DECLARE_DISPATCH_type
        end = hit.start() + len(b"_DECLARE_DISPATCH_type")
        for length in range(len(b"_DECLARE_DISPATCH_type") + 1, 200):
            digits = str(length).encode()
            start_name = end - length
            if name[start_name - len(digits):start_name] == digits and not name[start_name - len(digits) - 1:
                                                                                 start_name - len(digits)].isdigit():
                break
        key = name[:hit.start()].decode()  # the stub's whole type: two copy_stubs stay apart
        stub = name[start_name:hit.start()].decode()
        pointer = ctypes.c_void_p.in_dll(library, name.decode()).value
        stubs.setdefault(key, {"stub": stub})[hit.group(1).decode()] = pointer is not None
        stubs[key][hit.group(1).decode() + "_pointer"] = pointer
    return {k: v for k, v in stubs.items()}


def ns_per_element(op, k, reps):
    rows = TOTAL // k
    x, y = torch.rand(rows, k + PAD)[:, :k], torch.rand(rows, k + PAD)[:, :k]  # each row contiguous
    out = torch.empty(rows, k)
    call = (lambda: torch.sigmoid(x, out=out)) if op == "sigmoid" else (lambda: torch.add(x, y, out=out))
    call()  # warm-up
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time_ns()
        call()
        best = min(best, time.thread_time_ns() - t0)
    return best / (rows * k)


def sweep():
    """This process's capability and, per operator, its time per element for every row length K."""
    ns = {op: {} for op in OPS}
    for k in KS:
        for op in OPS:
            ns[op][k] = ns_per_element(op, k, 9)
    for k in CLOSE:
        for op in OPS:
            ns[op][k] = min(ns[op][k], ns_per_element(op, k, 31))
    return {"capability": torch.backends.cpu.get_cpu_capability(), "ns": ns}


def drop(ns, k):
    """How many times faster per element a row of k ran than a row of k - 1."""
    return ns[k - 1] / ns[k]


def knee(ns):
    """The row length, from 8 on, where the time per element dropped most."""
    return max((k for k in KS if k >= 8), key=lambda k: drop(ns, k))


if os.environ.get(CHILD):
    print(json.dumps(sweep()))
    sys.exit(0)

# The builds: read DispatchStub's pointers, and choose as choose_cpu_impl does.
capability = torch.backends.cpu.get_cpu_capability()
stubs = dispatch_pointers() if platform.system() == "Linux" else {}
pointers_read = bool(stubs)
with_avx512 = [s for s in stubs.values() if "AVX512" in s]
n_avx512_slots = len(with_avx512)
n_avx512_empty = sum(not s["AVX512"] for s in with_avx512)
n_avx512_set = n_avx512_slots - n_avx512_empty
# A set AVX512 pointer equal to the DEFAULT one is a single build shared by every capability
# (REGISTER_ALL_CPU_DISPATCH, or a kernel compiled outside native/cpu/), not AVX-512 code.
n_avx512_shared = sum(bool(s["AVX512"]) and s.get("AVX512_pointer") == s.get("DEFAULT_pointer")
                      for s in with_avx512)
n_avx512_own = n_avx512_set - n_avx512_shared
n_no_cpu_kernel = sum(not any(s.get(c) for c in ("DEFAULT", "AVX2", "AVX512")) for s in with_avx512)
by_name = {s["stub"]: s for s in stubs.values()}
NAMED = ["add_stub", "mul_stub", "sum_stub", "sin_stub", "clamp_min_scalar_stub", "addcmul_stub",
         "sigmoid_stub", "exp_stub", "log_stub", "tanh_stub", "pow_tensor_scalar_stub", "mse_stub"]
named_avx512 = {n: by_name[n].get("AVX512") for n in NAMED if n in by_name}
EMPTY_HERE = ["add_stub", "mul_stub", "sum_stub", "sin_stub", "clamp_min_scalar_stub", "addcmul_stub"]
named_slots_as_listed = (len(named_avx512) == len(NAMED)
                         and all(named_avx512[n] is False for n in EMPTY_HERE)
                         and all(named_avx512[n] is True for n in NAMED if n not in EMPTY_HERE))


def build_of(stub, cap):
    if cap == "AVX512":
        return "AVX512" if by_name.get(stub, {}).get("AVX512") else "AVX2"  # choose_cpu_impl's fallback
    return cap


builds = {op: build_of(stub, capability) for op, stub in OPS.items()}
steps = {op: 2 * lanes_for(b)[1] for op, b in builds.items()}
vector_isa = X86 and capability in ("AVX2", "AVX512")  # a hand-written x86 class runs
sigmoid_build, add_build = builds["sigmoid"], builds["add"]
sigmoid_step, add_step = steps["sigmoid"], steps["add"]
avx512_cpu = capability == "AVX512" and pointers_read
add_avx2_on_avx512 = avx512_cpu and add_build == "AVX2" and sigmoid_build == "AVX512"

here = sweep()
ns = here["ns"]
sigmoid_knee = knee(ns["sigmoid"])
sigmoid_drop_at_knee = drop(ns["sigmoid"], sigmoid_knee)
sigmoid_drop_at_step = drop(ns["sigmoid"], sigmoid_step)  # at the step its build predicts
sigmoid_drop_16, sigmoid_drop_32 = drop(ns["sigmoid"], 16), drop(ns["sigmoid"], 32)
add_drop_16, add_drop_32 = drop(ns["add"], 16), drop(ns["add"], 32)

# The same sweep in a second process, with another capability forced: AVX2, or DEFAULT where
# AVX2 is the capability already.
asked = "default" if capability == "AVX2" else "avx2"
child = subprocess.run([sys.executable, os.path.abspath(__file__)], capture_output=True, text=True, check=True,
                       env={**os.environ, CHILD: "1", "ATEN_CPU_CAPABILITY": asked})
other = json.loads(child.stdout.strip().splitlines()[-1])
other_capability = other["capability"]
other_ns = {op: {int(k): v for k, v in d.items()} for op, d in other["ns"].items()}
other_sigmoid_step = 2 * lanes_for(build_of("sigmoid_stub", other_capability))[1]
other_sigmoid_knee = knee(other_ns["sigmoid"])
other_sigmoid_drop = drop(other_ns["sigmoid"], other_sigmoid_knee)
other_sigmoid_drop_at_step = drop(other_ns["sigmoid"], other_sigmoid_step)  # the step the build predicts
other_vector_isa = X86 and other_capability in ("AVX2", "AVX512")
# add in the second process against add here, K by K: the median ratio (1 when the same build ran)
add_ratios = sorted(other_ns["add"][k] / ns["add"][k] for k in ns["add"])
add_forced_vs_own = add_ratios[len(add_ratios) // 2]

print(f"machine {platform.machine()}, CPU capability {capability}")
if pointers_read:
    print(f"DispatchStubs with an AVX512 slot: {n_avx512_slots}; empty: {n_avx512_empty} "
          f"({n_no_cpu_kernel} with no CPU kernel at all); set: {n_avx512_set}, of which "
          f"{n_avx512_shared} point at the same single build as DEFAULT and {n_avx512_own} at their own")
if pointers_read:
    print(f"DispatchStub pointers in libtorch_cpu: {n_avx512_slots} kernels with an AVX512 slot, "
          f"{n_avx512_empty} of them empty (where a CPU kernel exists, an AVX512 CPU runs its AVX2 build)")
    print("  AVX512 slot " + ", ".join(f"{n} {'set' if v else 'empty'}" for n, v in named_avx512.items()))
else:
    print("DispatchStub pointers: not read here (they are read from an ELF library on Linux)")
print(f"add with capability {other_capability} forced, against add here: median ratio over K {add_forced_vs_own:.2f}")
for op in OPS:
    print(f"{op}: the {builds[op]} build runs; one step of vectorized_loop = 2 x {steps[op] // 2} = {steps[op]}")
print(f"float32 rows of K elements, {TOTAL:,} elements in all, 1 thread, min of 9 calls (31 at K = 15, 16, 31, 32)")
print(f"{'K':>4}" + "".join(f"{op + ' ns/el':>14}" for op in OPS))
for k in [1, 8, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 96]:
    print(f"{k:>4}" + "".join(f"{ns[op][k]:>14.3f}" for op in OPS))
print(f"sigmoid: largest drop from K = 8 on at K={sigmoid_knee} ({sigmoid_drop_at_knee:.1f}x); "
      f"at its step, K={sigmoid_step}: {sigmoid_drop_at_step:.1f}x; "
      f"drop at 16: {sigmoid_drop_16:.2f}x, at 32: {sigmoid_drop_32:.1f}x")
print(f"add: drop at 16: {add_drop_16:.2f}x, at 32: {add_drop_32:.2f}x")
print(f"second process, ATEN_CPU_CAPABILITY={asked}: capability {other_capability}; sigmoid's largest drop "
      f"at K={other_sigmoid_knee} ({other_sigmoid_drop:.1f}x); at its step, K={other_sigmoid_step}: "
      f"{other_sigmoid_drop_at_step:.1f}x; "
      f"add's drop at 16: {drop(other_ns['add'], 16):.2f}x")

import matplotlib.pyplot as plt  # noqa: E402  (the second process needs no figure)
from matplotlib.ticker import FormatStrFormatter, NullFormatter  # noqa: E402

fig, axes = plt.subplots(2, 1, figsize=(8, 5.0), sharex=True)
for ax, op in zip(axes, OPS):
    ax.plot(KS, [ns[op][k] for k in KS], "o-", ms=2.5, color="C0", label=f"capability {capability}")
    ax.plot(KS, [other_ns[op][k] for k in KS], "s-", ms=2, lw=0.8, color="C2",
            label=f"capability {other_capability}, second process")
    for m in range(steps[op], KS[-1] + 1, steps[op]):
        ax.axvline(m, ls=":", color="C1")
    ax.set_yscale("log")
    ax.set_yticks([t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10) if 0.8 * min(ns[op].values()) < t < 1.2 * max(ns[op].values())])
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("ns per element (log)")
    ax.set_title(f"torch.{op}: the {builds[op]} build runs here, a step of {steps[op]} (dotted)", fontsize=10)
    ax.legend(frameon=False, loc="upper right", fontsize=8)
axes[1].set_xlabel("row length K (elements per contiguous row)")
fig.suptitle("Vector steps, scalar leftovers: the step is two vectors of the build that runs", fontsize=11)
fig.tight_layout()
plt.show()

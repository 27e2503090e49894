"""The one-element toll taken apart: Python, the binding, the GIL, the dispatcher, autograd, the kernel, allocation, wrapping, freeing.

torch.add(a, b) on one-element float32 tensors is timed whole, and its C++ pieces are timed
alone by calling them directly with ctypes, skipping everything above them:
at::cpu::add_out (the CPU kernel, writing into an existing tensor: no dispatcher, no
allocation), at::cpu::add (the same kernel allocating its result), at::_ops::add_Tensor::call
(the dispatcher's entry: key set, autograd kernel, then the CPU kernel) on ordinary tensors
and on inference tensors under inference_mode (no autograd kernel), and THPVariable_Wrap (a
C++ tensor made into a Python one). These are exported C++ functions of libtorch_cpu and
libtorch_python, found by their mangled names. They take tensors and the Scalar alpha by
reference (a pointer each), which needs two layouts from the shipped headers: an at::Tensor
is one pointer to its TensorImpl, and a c10::Scalar (c10/core/Scalar.h) is a tag and a union
that holds a c10::complex<double>, aligned to 16 bytes (torch/headeronly/util/complex.h): 32
bytes in all. The functions that return an at::Tensor (at::cpu::add, add_Tensor::call) are
called with the x86-64 System V convention, where the result comes back through a hidden
first argument; other machines return it differently (aarch64 through register x8, which
ctypes cannot set), so there the script measures only what needs no returned tensor: the
whole call, Python's part, the GIL, the kernel through at::cpu::add_out (which returns a
reference) and freeing, says which pieces it left out, and sets x86_64 to False. It checks
each ctypes result against a + b before it times.

Each ctypes call is timed against a ctypes call of the same shape to a C function that does
nothing with its arguments (the C library's labs, given the same four pointers), so the cost
of ctypes itself drops out:
PyDLL functions keep the GIL, CDLL functions release it, so the two no-ops differ by the
price of releasing and retaking the GIL. Python's own part is a builtin of the same calling
convention that does nothing with its two arguments ("".format). Freeing is timed as the
deallocation of 200 Python tensors (results of torch.add) against 200 plain objects. The
binding's own work (argument parsing, the
__torch_function__ check, the generated code around them) is what the whole call leaves
over. Calls run in batches of 200 (results of allocating calls are kept, then wrapped and
freed outside the timing); every variant runs once per round, 200 rounds (time.perf_counter_ns).
Each round gives one set of pieces, the binding's share being what that round's whole call
leaves over; the script reports, for each piece, its median over the rounds, and prints each
variant's minimum too. One intra-op thread; garbage collection off while timing.
"""
import ctypes
import gc
import math
import os
import platform
import statistics
import time

import matplotlib.pyplot as plt
import torch

if os.name != "posix":
    raise SystemExit("this script calls the C library and torch's C++ functions by name through ctypes: "
                     "Linux and macOS only")
x86_64 = platform.machine().lower() in ("x86_64", "amd64")   # returned at::Tensor: a hidden first argument
torch.set_num_threads(1)
LIB_DIR = os.path.join(os.path.dirname(torch.__file__), "lib")
EXT = ".dylib" if platform.system() == "Darwin" else ".so"
cpu_lib = ctypes.PyDLL(os.path.join(LIB_DIR, "libtorch_cpu" + EXT))
py_lib = ctypes.PyDLL(os.path.join(LIB_DIR, "libtorch_python" + EXT))
MANGLED = {  # exported C++ functions, by their Itanium-ABI names
    "call": "_ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE",
    "cpu_add": "_ZN2at3cpu3addERKNS_6TensorES3_RKN3c106ScalarE",
    "cpu_add_out": "_ZN2at3cpu7add_outERNS_6TensorERKS1_S4_RKN3c106ScalarE",
}
f = {k: getattr(cpu_lib, v) for k, v in MANGLED.items()}
for fn in f.values():
    fn.restype = ctypes.c_void_p
wrap = py_lib._Z16THPVariable_WrapON2at10TensorBaseE   # THPVariable_Wrap(at::TensorBase&&)
wrap.restype = ctypes.py_object
noop = ctypes.PyDLL(None).labs                         # keeps the GIL, like the functions above
noop_releasing = ctypes.CDLL(None).labs                # releases the GIL around the call
for fn in (noop, noop_releasing):
    fn.restype = ctypes.c_void_p
py_bool = ctypes.pythonapi.PyBool_FromLong
py_bool.restype = ctypes.py_object


class Scalar(ctypes.Structure):
    """c10::Scalar holding the integer 1: tag HAS_i (1), then the union at byte 16."""
    _fields_ = [("tag", ctypes.c_int64), ("pad", ctypes.c_int64), ("i", ctypes.c_int64),
                ("pad2", ctypes.c_int64)]


torch.manual_seed(0)
a, b, out = torch.randn(1), torch.randn(1), torch.empty(1)
with torch.inference_mode():
    ai, bi = torch.randn(1), torch.randn(1)
K = 200
slots = (ctypes.c_void_p * K)()                        # room for K returned at::Tensor
ptrs = [ctypes.byref(slots, 8 * i) for i in range(K)]
handles = [ctypes.c_void_p(t._cdata) for t in (a, b, out, ai, bi)]  # _cdata: the TensorImpl*
A, B, O, AI, BI = map(ctypes.byref, handles)
alpha = Scalar(1, 0, 1, 0)
ALPHA = ctypes.byref(alpha)
kept = [None] * K

f["cpu_add_out"](O, A, B, ALPHA)
if not torch.equal(out, a + b):
    raise RuntimeError("at::cpu::add_out through ctypes did not write a + b")
if x86_64:
    f["call"](ptrs[0], A, B, ALPHA)
    if not torch.equal(wrap(ptrs[0]), a + b):
        raise RuntimeError("at::_ops::add_Tensor::call through ctypes did not return a + b")


def release_results():
    """Wrap the K at::Tensor results in Python objects and drop them (not timed)."""
    for i in range(K):
        kept[i] = wrap(ptrs[i])
    kept[:] = [None] * K


def batch(body, cleanup=None):
    def timed():
        t0 = time.perf_counter_ns()
        body()
        ns = (time.perf_counter_ns() - t0) / K
        if cleanup:
            cleanup()
        return ns
    return timed


def ctypes_loop(fn, *args, inference=False):
    def body():
        with torch.inference_mode(inference):
            for p in ptrs:
                fn(p, *args)
    return body


def out_loop():
    for p in ptrs:
        f["cpu_add_out"](O, A, B, ALPHA)


def wrap_loop():
    for i in range(K):
        kept[i] = wrap(ptrs[i])


def bool_loop():
    for i in range(K):
        kept[i] = py_bool(ptrs[i])


def fill_fresh():
    for p in ptrs:
        f["cpu_add"](p, A, B, ALPHA)


def timed_wrap():
    fill_fresh()
    t0 = time.perf_counter_ns()
    wrap_loop()
    ns = (time.perf_counter_ns() - t0) / K
    kept[:] = [None] * K
    return ns


def timed_bool():
    t0 = time.perf_counter_ns()
    bool_loop()
    ns = (time.perf_counter_ns() - t0) / K
    kept[:] = [None] * K
    return ns


def timed_free():
    for i in range(K):
        kept[i] = add(a, b)             # fresh results, each a Python tensor over its own TensorImpl
    t0 = time.perf_counter_ns()
    kept[:] = [None] * K                # each Python tensor freed, then its TensorImpl and storage
    return (time.perf_counter_ns() - t0) / K


add, fmt = torch.add, "".format


def timed_free_objects():
    for i in range(K):
        kept[i] = object()
    t0 = time.perf_counter_ns()
    kept[:] = [None] * K
    return (time.perf_counter_ns() - t0) / K




def add_loop():
    for _ in ptrs:
        add(a, b)


def fmt_loop():
    for _ in ptrs:
        fmt(a, b)


def empty_loop():
    for _ in ptrs:
        pass


VARIANTS = {
    "loop": batch(empty_loop),
    "torch.add(a, b)": batch(add_loop),
    '"".format(a, b)': batch(fmt_loop),
    "no-op, keeps the GIL": batch(ctypes_loop(noop, A, B, ALPHA)),
    "no-op, releases the GIL": batch(ctypes_loop(noop_releasing, A, B, ALPHA)),
    "at::cpu::add_out": batch(out_loop),
    "free 200 tensors": timed_free,
    "free 200 objects": timed_free_objects,
}
RETURNING = {  # the variants that need a returned at::Tensor: x86-64 only
    "at::cpu::add": batch(ctypes_loop(f["cpu_add"], A, B, ALPHA), release_results),
    "at::cpu::add, inference": batch(ctypes_loop(f["cpu_add"], AI, BI, ALPHA, inference=True),
                                     release_results),
    "add_Tensor::call": batch(ctypes_loop(f["call"], A, B, ALPHA), release_results),
    "add_Tensor::call, inference": batch(ctypes_loop(f["call"], AI, BI, ALPHA, inference=True),
                                         release_results),
    "THPVariable_Wrap": timed_wrap,
    "PyBool_FromLong": timed_bool,
}
if x86_64:
    VARIANTS.update(RETURNING)
ROUNDS = 200
per_round = {name: [] for name in VARIANTS}
gc.disable()
for rnd in range(ROUNDS + 3):                           # three warm-up rounds
    for name, run in VARIANTS.items():
        ns = run()
        if rnd >= 3:
            per_round[name].append(ns)
gc.enable()


NAN = float("nan")


def taken_apart(t):
    """The pieces of one torch.add(a, b), from one round's times (or from the minima).

    Pieces that need a variant this machine cannot call are nan, and so is the binding's share."""
    t = {**{name: NAN for name in RETURNING}, **t}
    total = t["torch.add(a, b)"] - t["loop"]
    parts = {
        "Python: the call itself": t['"".format(a, b)'] - t["loop"],
        "the binding: parsing, checks": 0.0,            # filled in below: what is left over
        "releasing and retaking the GIL": t["no-op, releases the GIL"] - t["no-op, keeps the GIL"],
        "dispatcher: key set, table, call": t["add_Tensor::call, inference"]
        - t["at::cpu::add, inference"],
        "autograd kernel": (t["add_Tensor::call"] - t["add_Tensor::call, inference"])
        - (t["at::cpu::add"] - t["at::cpu::add, inference"]),
        "kernel: checks, TensorIterator, loop": t["at::cpu::add_out"] - t["no-op, keeps the GIL"],
        "allocating the result": t["at::cpu::add"] - t["at::cpu::add_out"],
        "wrapping it in a Python object": t["THPVariable_Wrap"] - t["PyBool_FromLong"],
        "freeing it": t["free 200 tensors"] - t["free 200 objects"],
    }
    parts["the binding: parsing, checks"] = total - sum(parts.values())
    return total, parts


rounds_apart = [taken_apart({name: times[r] for name, times in per_round.items()})
                for r in range(ROUNDS)]
t = {name: min(times) for name, times in per_round.items()}   # the minima, printed below
total_ns = statistics.median(total for total, _ in rounds_apart)
pieces = {name: statistics.median(parts[name] for _, parts in rounds_apart)
          if x86_64 or not math.isnan(rounds_apart[0][1][name]) else NAN for name in rounds_apart[0][1]}
missing = [name for name, ns in pieces.items() if math.isnan(ns)]
python_ns = pieces["Python: the call itself"]
binding_ns = pieces["the binding: parsing, checks"]
gil_ns = pieces["releasing and retaking the GIL"]
dispatcher_ns = pieces["dispatcher: key set, table, call"]
autograd_ns = pieces["autograd kernel"]
kernel_ns = pieces["kernel: checks, TensorIterator, loop"]
alloc_ns = pieces["allocating the result"]
wrap_ns = pieces["wrapping it in a Python object"]
free_ns = pieces["freeing it"]
bookkeeping_ns = autograd_ns + alloc_ns + wrap_ns + free_ns
python_side_ns = python_ns + binding_ns
cpp_ns = total_ns - python_ns - binding_ns - gil_ns

print(f"torch.add(a, b), one-element float32: {total_ns:,.0f} ns per call; its pieces, each the "
      f"median over {ROUNDS} rounds of {K} calls of every variant:")
for name, ns in pieces.items():
    shown = f"{ns:7,.0f} ns  {ns / total_ns:5.0%}" if not math.isnan(ns) else "   (needs x86-64)"
    print(f"  {name:40s}{shown}")
if missing:
    print(f"on {platform.machine()}, a function returning an at::Tensor cannot be called through ctypes "
          f"(the result's address goes in a register ctypes does not set), so these pieces need x86-64: "
          f"{'; '.join(missing)}")
print("each variant's minimum, ns per call:")
for name, ns in t.items():
    print(f"  {name:32s}{ns:8,.0f}")

fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
start = 0.0
for row, (name, ns) in enumerate(pieces.items()):
    if math.isnan(ns):
        ax.text(start + 8, row, "needs x86-64", va="center", fontsize=8)
        continue
    width = max(ns, 0.0)
    ax.barh(row, width, left=start, color="C0" if row < 3 else "C1" if row < 5 else "C3"
            if row == 5 else "C2")
    ax.text(start + width + 8, row, f"{ns:,.0f} ns", va="center", fontsize=8)
    start += width
ax.set_yticks(range(len(pieces)), list(pieces), fontsize=8)
ax.invert_yaxis()
ax.set_xlim(0, total_ns * 1.15)
ax.set_xlabel("ns into one torch.add(a, b) call (pieces in the order they run)")
ax.set_title(f"One {total_ns:,.0f} ns torch.add on one element, taken apart")
plt.show()

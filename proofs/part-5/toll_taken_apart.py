"""The path of one torch.add(a, b), from the Python call to freeing its result: nine stations, each timed alone.

torch.add(a, b) on one-element float32 tensors is timed whole, and the stations of its path
are timed alone. Python's own part is a builtin of the same calling convention that does
nothing with its two arguments ("".format). The C++ stations are timed by calling exported
C++ functions of libtorch_cpu and libtorch_python directly with ctypes, by their mangled
names, which skips everything above them: at::cpu::add_out (the CPU kernel writing into an
existing tensor: its checks, TensorIterator and the loop, nothing allocated), at::cpu::add
(the same kernel allocating its result), at::_ops::add_Tensor::call (the dispatcher's entry:
the key set, the autograd kernel, then the CPU kernel), each on ordinary tensors and on
inference tensors under inference_mode (where no autograd kernel runs), and THPVariable_Wrap
(a C++ tensor made into a Python one). The dispatcher's own station is timed where the
kernel behind it costs next to nothing: at::_ops::is_same_size::call on inference tensors
under inference_mode (one trip through the dispatcher, to a kernel that compares sizes)
against that kernel called directly, at::native::is_same_size; both return a bool, so it is
measured on any machine. They take their tensors and the Scalar alpha by
reference, which needs two layouts from the shipped headers: an at::Tensor is one pointer to
its TensorImpl, and a c10::Scalar (c10/core/Scalar.h) is a tag and a union aligned to 16
bytes, 32 bytes in all. The functions that return an at::Tensor are called with the x86-64
System V convention, where the result comes back through a hidden first argument; other
machines return it differently (aarch64 through register x8, which ctypes cannot set), so
there the script leaves out the stations that need a returned tensor, says so, and sets
x86_64 to False. It checks each ctypes result against a + b before it times anything.

Each ctypes call is timed against a ctypes call of the same shape to a C function that does
nothing with its arguments (the C library's labs), so that ctypes' own cost drops out; PyDLL
functions keep the GIL and CDLL functions release it, so two such no-ops differ by the price
of releasing and retaking it. Every call that returns a tensor is followed at once by
THPVariable_Wrap, and the Python object is dropped at once, as in a real loop (the baseline:
the no-op followed by PyBool_FromLong), so at::cpu::add against at::cpu::add_out is
allocating, wrapping and freeing the result together. Wrapping alone is timed on 200 fresh
results at a time (against PyBool_FromLong), and freeing alone as dropping 200 Python tensors
(against 200 plain objects); allocating is what the three together leave. The binding's
station (parsing, the __torch_function__ check, the code around the call) is measured on a
sibling: torch.is_same_size(a, b) goes through a generated binding of the same kind, with two
tensor arguments, to a kernel that only compares sizes; timed whole, less Python's part, the
GIL's and its own at::_ops::is_same_size::call (which returns a bool: any machine), it leaves
what its binding costs.

The prediction: the nine stations, added up, against the whole call. Stations 1 and 3 enter
the sum twice, once as themselves and once taken away from the sibling to give station 2, so
they cancel: what the sum tests is that torch.is_same_size(a, b) timed whole, with its own C++
taken out and add's C++ stations (each timed alone through ctypes) put in, costs what
torch.add(a, b) costs. Stations timed alone need not add up exactly: they run with ctypes' own
code between their calls, and add's binding is not is_same_size's.
For the pricing of a fresh result as torch.add(a, b) against torch.add(a, b, out=c), as
Part 0 does, the script also times the out= call; and it times torch.add on 2**20 elements,
25 times, to say how many elements of adding the toll is worth. Calls run in batches of 200,
each after 20 untimed calls of the same kind, so that a batch does not pay for the code its
neighbour left in the caches; every variant runs once per round, 300 rounds after 5 of
warm-up, timed with this thread's CPU time (time.thread_time_ns, so that moments when
another program has the core do not count); each round gives one set of stations, and each
station is its median over the rounds. One intra-op thread; garbage collection off while
timing. The dispatcher's table (the private torch._C._dispatch_dump_table) names the
generated files the CPU and autograd kernels were registered from, for the figure.
"""
import ctypes
import gc
import math
import os
import platform
import re
import statistics
import time

import matplotlib.pyplot as plt
import torch

if os.name != "posix":
    raise SystemExit("this script calls the C library and torch's C++ functions by name through ctypes: "
                     "Linux and macOS only")
machine_arch = platform.machine()
x86_64 = machine_arch.lower() in ("x86_64", "amd64")   # returned at::Tensor: a hidden first argument
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
same_size = cpu_lib._ZN2at4_ops12is_same_size4callERKNS_6TensorES4_   # returns a bool: any machine
same_size_native = cpu_lib._ZN2at6native12is_same_sizeERKNS_6TensorES3_  # its kernel, no dispatcher
for fn in (same_size, same_size_native):
    fn.restype = ctypes.c_bool
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
slot = (ctypes.c_void_p * 1)()                         # room for one returned at::Tensor
S = ctypes.byref(slot)
many = (ctypes.c_void_p * K)()                         # room for K of them, for wrapping alone
ptrs = [ctypes.byref(many, 8 * i) for i in range(K)]
handles = [ctypes.c_void_p(t._cdata) for t in (a, b, out, ai, bi)]  # _cdata: the TensorImpl*
A, B, O, AI, BI = map(ctypes.byref, handles)
alpha = Scalar(1, 0, 1, 0)
ALPHA = ctypes.byref(alpha)
kept = [None] * K
TIMED, WARM = range(K), range(20)
R = TIMED

f["cpu_add_out"](O, A, B, ALPHA)
if not torch.equal(out, a + b):
    raise RuntimeError("at::cpu::add_out through ctypes did not write a + b")

if same_size(A, B) is not True or same_size_native(A, B) is not True:
    raise RuntimeError("is_same_size through ctypes did not answer True")
if x86_64:
    f["call"](S, A, B, ALPHA)
    if not torch.equal(wrap(S), a + b):
        raise RuntimeError("at::_ops::add_Tensor::call through ctypes did not return a + b")
add, fmt, is_same_size = torch.add, "".format, torch.is_same_size


def timed(body):
    """ns per call of a loop body that makes K calls, after 20 untimed ones (the code warms up)."""
    def run():
        global R
        R = WARM
        body()
        R = TIMED
        t0 = time.thread_time_ns()
        body()
        return (time.thread_time_ns() - t0) / K
    return run


def returning(fn, x, y, inference=False):
    """K calls of a C++ function that returns a tensor, each wrapped and dropped at once."""
    def body():
        with torch.inference_mode(inference):
            for _ in R:
                fn(S, x, y, ALPHA)
                wrap(S)
    return body


def with_bool(fn, *args):
    def body():
        for _ in R:
            fn(*args)
            py_bool(S)
    return body


def timed_wrap():
    for p in ptrs:
        f["cpu_add"](p, A, B, ALPHA)    # K fresh results, not timed
    t0 = time.thread_time_ns()
    for i in R:
        kept[i] = wrap(ptrs[i])
    ns = (time.thread_time_ns() - t0) / K
    kept[:] = [None] * K
    return ns


def timed_bool():
    t0 = time.thread_time_ns()
    for i in R:
        kept[i] = py_bool(ptrs[i])
    ns = (time.thread_time_ns() - t0) / K
    kept[:] = [None] * K
    return ns


def timed_free(make):
    def run():
        for i in R:
            kept[i] = make()
        t0 = time.thread_time_ns()
        kept[:] = [None] * K            # each freed: a tensor's Python object, TensorImpl and storage
        return (time.thread_time_ns() - t0) / K
    return run


def loop():
    for _ in R:
        pass


def whole():
    for _ in R:
        add(a, b)


def whole_out():
    for _ in R:
        add(a, b, out=out)


def python_call():
    for _ in R:
        fmt(a, b)


def sibling():
    for _ in R:
        is_same_size(a, b)


def sibling_cpp():
    for _ in R:
        same_size(A, B)


def sibling_cpp_inference():
    with torch.inference_mode():
        for _ in R:
            same_size(AI, BI)


def sibling_native():
    with torch.inference_mode(False):      # the same shape of loop, outside inference mode
        for _ in R:
            same_size_native(A, B)


def noop_two():
    for _ in R:
        noop(A, B)


VARIANTS = {
    "loop": timed(loop),
    "torch.add(a, b)": timed(whole),
    "torch.add(a, b, out=c)": timed(whole_out),
    '"".format(a, b)': timed(python_call),
    "torch.is_same_size(a, b)": timed(sibling),
    "is_same_size::call": timed(sibling_cpp),
    "no-op, two arguments": timed(noop_two),
    "no-op, keeps the GIL": timed(with_bool(noop, S, A, B, ALPHA)),
    "no-op, releases the GIL": timed(with_bool(noop_releasing, S, A, B, ALPHA)),
    "at::cpu::add_out": timed(with_bool(f["cpu_add_out"], O, A, B, ALPHA)),
    "is_same_size::call, inference": timed(sibling_cpp_inference),
    "at::native::is_same_size": timed(sibling_native),
    "free 200 tensors": timed_free(lambda: add(a, b)),
    "free 200 objects": timed_free(object),
}
RETURNING = {  # the variants that need a returned at::Tensor: x86-64 only
    "at::cpu::add": timed(returning(f["cpu_add"], A, B)),
    "at::cpu::add, inference": timed(returning(f["cpu_add"], AI, BI, inference=True)),
    "add_Tensor::call": timed(returning(f["call"], A, B)),
    "add_Tensor::call, inference": timed(returning(f["call"], AI, BI, inference=True)),
    "THPVariable_Wrap": timed_wrap,
    "PyBool_FromLong": timed_bool,
}
if x86_64:
    VARIANTS.update(RETURNING)
ROUNDS, WARMUP = 300, 5
per_round = {name: [] for name in VARIANTS}
gc.disable()
for rnd in range(ROUNDS + WARMUP):
    for name, run in VARIANTS.items():
        ns = run()
        if rnd >= WARMUP:
            per_round[name].append(ns)
gc.enable()
NAN = float("nan")

STATIONS = [  # (station, where it runs), in the order a call meets them
    ("Python calls the builtin", "CPython"),
    ("THPVariable_add: parse the arguments", "python_torch_functions_*.cpp; timed on is_same_size"),
    ("release the GIL, retake it", "pybind11::gil_scoped_release"),
    ("the dispatcher: key set, table, call", "Operators_*.cpp, Dispatcher.h; timed on is_same_size"),
    ("VariableType::add_Tensor: autograd", "VariableType_*.cpp"),
    ("the CPU kernel: checks, loop", "wrapper_CPU_add_Tensor"),
    ("allocate the result", "at::detail::empty_cpu, c10::alloc_cpu"),
    ("THPVariable_Wrap: its Python object", "python_variable.cpp"),
    ("free it, when it is dropped", "THPVariable_dealloc, ~TensorImpl"),
]


def taken_apart(t):
    """({station: ns}, extras) from one round's times; nan where a variant is missing."""
    t = {**{name: NAN for name in RETURNING}, **t}
    total = t["torch.add(a, b)"] - t["loop"]
    python = t['"".format(a, b)'] - t["loop"]
    gil = t["no-op, releases the GIL"] - t["no-op, keeps the GIL"]
    binding = (t["torch.is_same_size(a, b)"] - t["loop"]) - python - gil - (
        t["is_same_size::call"] - t["no-op, two arguments"])      # a sibling binding, less what it calls
    wrap_alone = t["THPVariable_Wrap"] - t["PyBool_FromLong"]
    free_alone = t["free 200 tensors"] - t["free 200 objects"]
    made = t["at::cpu::add"] - t["at::cpu::add_out"]                # allocate, wrap and free, together
    parts = dict(zip((s for s, _ in STATIONS), (
        python,
        binding,
        gil,
        t["is_same_size::call, inference"] - t["at::native::is_same_size"],   # the dispatcher alone
        (t["add_Tensor::call"] - t["add_Tensor::call, inference"])
        - (t["at::cpu::add"] - t["at::cpu::add, inference"]),
        t["at::cpu::add_out"] - t["no-op, keeps the GIL"],
        made - wrap_alone - free_alone,
        wrap_alone,
        free_alone,
    )))
    extras = {"total": total, "made": made,
              "cpp_alone": t["add_Tensor::call"] - t["no-op, keeps the GIL"],  # stations 4 to 9, whole
              "ladder_alloc": t["torch.add(a, b)"] - t["torch.add(a, b, out=c)"]}
    return parts, extras


rounds = [taken_apart({name: times[r] for name, times in per_round.items()}) for r in range(ROUNDS)]
median = statistics.median


def middle(values):
    values = [v for v in values if not math.isnan(v)]
    return median(values) if values else NAN


pieces = {name: middle([parts[name] for parts, _ in rounds]) for name, _ in STATIONS}
extra = {k: middle([x[k] for _, x in rounds]) for k in rounds[0][1]}
total_ns = extra["total"]
(python_ns, binding_ns, gil_ns, dispatcher_ns, autograd_ns, kernel_ns, alloc_ns, wrap_ns,
 free_ns) = pieces.values()
made_ns = extra["made"]                      # allocating, wrapping and freeing the result, together
above_cpp_ns = python_ns + binding_ns + gil_ns   # stations 1 to 3: up to the dispatcher
cpp_ns = total_ns - above_cpp_ns              # what the call leaves for stations 4 to 9
cpp_alone_ns = extra["cpp_alone"]             # stations 4 to 9 timed alone, as one ctypes call
predicted_total_ns = sum(pieces.values())     # the nine stations added up, as the figure stacks them
measured_over_predicted = total_ns / predicted_total_ns
top_three_ns = kernel_ns + alloc_ns + autograd_ns     # stations 6, 7 and 5
second_ns = max(ns for name, ns in pieces.items() if name != STATIONS[5][0])   # the largest but the kernel
out_call_ns = median(t - l for t, l in zip(per_round["torch.add(a, b, out=c)"], per_round["loop"]))
ladder_alloc_ns = extra["ladder_alloc"]       # what a ladder calls allocating: add less add(out=)
out_costs_ns = made_ns - ladder_alloc_ns       # what passing out= and checking it cost instead
missing = [name for name, ns in pieces.items() if math.isnan(ns)]
# Where the toll stops mattering: the same torch.add on 2**20 elements, on this one thread, gives the
# add's own cost per element; the toll is worth that many elements of work.
N_BIG = 1 << 20
big_a, big_b = torch.randn(N_BIG), torch.randn(N_BIG)
big_times = []
for _ in range(25):
    t0 = time.thread_time_ns()
    add(big_a, big_b)
    big_times.append(time.thread_time_ns() - t0)
ns_per_element = (median(big_times) - total_ns) / N_BIG
toll_in_elements = total_ns / ns_per_element      # a tensor this size spends as long adding as on the toll
table = torch._C._dispatch_dump_table("aten::add.Tensor")      # private: torch._C._dispatch_*
cpu_file = re.search(r"^CPU: registered at \S*/(\w+\.cpp)", table, re.M).group(1)
autograd_file = re.search(r"^AutogradCPU: registered at \S*/(\w+\.cpp)", table, re.M).group(1)
STATIONS[4] = (STATIONS[4][0], autograd_file + " (generated)")
STATIONS[5] = (STATIONS[5][0], f"wrapper_CPU_add_Tensor, {cpu_file} (generated)")

print(f"torch.add(a, b), one-element float32, timed whole: {total_ns:,.0f} ns per call")
print(f"its stations, each timed alone (median over {ROUNDS} rounds of {K} calls of every variant):")
for (name, where), ns in zip(STATIONS, pieces.values()):
    shown = f"{ns:7,.0f} ns  {ns / total_ns:5.0%}" if not math.isnan(ns) else "   (needs x86-64)"
    print(f"  {name:44s}{shown}   {where}")
print("  (2: torch.is_same_size(a, b) timed whole, less stations 1 and 3 and its own "
      "at::_ops::is_same_size::call)")
if missing:
    print(f"on {platform.machine()}, a function returning an at::Tensor cannot be called through ctypes "
          f"(the result's address goes in a register ctypes does not set), so these stations need x86-64: "
          f"{'; '.join(missing)}")
else:
    print(f"stations 4 to 9 timed alone, as one call of add_Tensor::call: {cpp_alone_ns:,.0f} ns; "
          f"inside torch.add they have {cpp_ns:,.0f} ns (the whole less stations 1 to 3)")
    print(f"prediction, stations 1 to 9 added up: {predicted_total_ns:,.0f} ns; measured {total_ns:,.0f} ns "
          f"({measured_over_predicted:.2f} of the prediction; stations 1 and 3 cancel out of the sum)")
    print(f"stations 5 to 7 (autograd, the CPU kernel, allocating): {top_three_ns:,.0f} ns, "
          f"{top_three_ns / total_ns:.0%} of the call; the kernel {kernel_ns:,.0f} ns, the next largest "
          f"station {second_ns:,.0f} ns")
    print(f"allocating, wrapping and freeing the result, together: {made_ns:,.0f} ns")
    print(f"torch.add(a, b, out=c): {out_call_ns:,.0f} ns; torch.add(a, b) less that (a ladder's "
          f"'allocation' step): {ladder_alloc_ns:,.0f} ns: the out= call saves {made_ns:,.0f} ns and pays "
          f"{out_costs_ns:,.0f} ns for passing out= and checking it")
print(f"torch.add on {N_BIG:,} elements (median of 25, this thread): {ns_per_element:.2f} ns per element, "
      f"so the toll is worth about {toll_in_elements:,.0f} elements of adding")
print("each variant's median, ns per call:")
for name, times in per_round.items():
    print(f"  {name:32s}{median(times):8,.0f}")

FLOOR_COLOURS = ["C0", "C1", "C1", "C2", "C4", "C3", "C5", "C1", "C5"]
FLOORS = {"C0": "floor 2, Python", "C1": "floor 3, the boundary", "C2": "floor 4, the dispatcher",
          "C4": "floor 5, autograd", "C3": "floor 6, kernels", "C5": "floor 7, memory"}
fig, ax = plt.subplots(figsize=(7.6, 4.2), layout="constrained")
start = 0.0
for row, ((name, where), ns, colour) in enumerate(zip(STATIONS, pieces.values(), FLOOR_COLOURS)):
    if math.isnan(ns):
        ax.text(start + 8, row, "needs x86-64", va="center", fontsize=8)
        continue
    width = max(ns, 0.0)
    ax.barh(row, width, left=start, color=colour, height=0.62)
    ax.text(start + width + 12, row - 0.05, f"{ns:,.0f} ns", va="center", fontsize=9)
    ax.text(start, row + 0.48, where, va="center", fontsize=6.5, color="C7")
    start += width
ax.set_yticks(range(len(STATIONS)), [f"{i + 1}  {n}" for i, (n, _) in enumerate(STATIONS)], fontsize=8)
ax.axvline(total_ns, color="C7", lw=1, ls="--")
whole_first = total_ns <= start           # the label of the smaller of the two stands to the left
ax.text(total_ns, -0.6, f"the whole call, timed whole: {total_ns:,.0f} ns " if whole_first else
        f" the whole call, timed whole: {total_ns:,.0f} ns", fontsize=8, ha="right" if whole_first else "left",
        va="center", color="C7")
if start > 0:
    ax.axvline(start, color="C7", lw=1, ls=":")
    ax.text(start, -0.6, f" the nine added up: {start:,.0f} ns" if whole_first else
            f"the nine added up: {start:,.0f} ns ", fontsize=8, ha="left" if whole_first else "right",
            va="center", color="C7")
ax.set_xlim(0, max(start, total_ns) * 1.6)
ax.set_ylim(len(STATIONS) - 0.35, -0.95)
ax.set_xlabel("ns, each station timed alone, in the order a call meets them", fontsize=9)
for colour, floor in FLOORS.items():
    ax.barh([0], [0], color=colour, label=floor)
ax.legend(fontsize=7.5, loc="center right", frameon=False)
ax.set_title("The path of one torch.add on one element", fontsize=10)
plt.show()

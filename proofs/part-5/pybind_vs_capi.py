"""Two ways to bind C++ to Python in torch._C: the CPython API directly, or pybind11, which costs more per call.

torch._C's functions are all builtins, but their PyMethodDefs point at two kinds of C
functions. A function written against CPython's API has its own C entry point; every
function bound with pybind11 shares one, pybind11::cpp_function::dispatcher, which finds the
C++ function to call in a record kept on the builtin's __self__ and converts the arguments
and the result with pybind11's type casters. The script reads each builtin's C entry point
(ctypes at CPython's PyCFunctionObject layout, as in find_the_function.py; it checks the
name it reads back) and counts the two kinds, naming the shared entry point from the
symbol table of the library that holds it. Then it times calls that do almost nothing in
each kind: two getters that return a bool, and two setters that take one bool (each set to
the value it already has), each bound to a local name first, so that no attribute lookup is
timed. Times are this thread's CPU time (time.thread_time) for 20,000 calls, in 25 rounds
that each time all four in an order rotated from round to round, after a warm-up; each keeps
its minimum, and a ratio is the median over rounds of the ratio within a round.
"""
import ctypes
import mmap
import os
import re
import struct
import statistics
import time
import timeit
import types

import numpy as np
import torch


def rounds(timers, number, n_rounds=25):
    """{name: [ns per call in each round]}: every round times each statement once, in an order
    rotated by one from the round before, so no statement always follows the same neighbour."""
    names = list(timers)
    times = {name: [] for name in names}
    for r in range(n_rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(timers[name].timeit(number) / number * 1e9)
    return times


def ratio(times, top, bottom):
    """The median over rounds of top's time over bottom's time in the same round."""
    return statistics.median(t / b for t, b in zip(times[top], times[bottom]))


SYM = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"),
                ("value", "<u8"), ("size", "<u8")])


def entry_point(fn):
    """The address of the C function a builtin's PyMethodDef points at."""
    table = ctypes.c_void_p.from_address(id(fn) + 16).value          # PyCFunctionObject.m_ml
    if ctypes.string_at(ctypes.c_void_p.from_address(table).value).decode() != fn.__name__:
        raise RuntimeError("CPython's object layout differs here: PyMethodDef name mismatch")
    return ctypes.c_void_p.from_address(table + 8).value


def symbol_name(address):
    """The function symbol at `address`, from the file's .symtab (Linux, ELF)."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi:
                path, offset = fields[5], address - lo + int(fields[2], 16)
                break
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
        loads = [struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
        vaddr = next(v + offset - off for kind, _, off, v, _, size in loads
                     if kind == 1 and off <= offset < off + size)
        raw = [struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize) for i in range(shnum)]
        names_at = raw[shstrndx][4]
        table = next(r for r in raw if data[names_at + r[0]:names_at + r[0] + 8] == b".symtab\0")
        syms = np.frombuffer(data, SYM, table[5] // SYM.itemsize, table[4])
        hit = int(np.nonzero((syms["value"] == vaddr) & ((syms["info"] & 0xF) == 2))[0][0])
        start = raw[table[6]][4] + int(syms["name"][hit])
        name = data[start:data.find(b"\0", start)].decode()
        del syms
    return os.path.basename(path), name


def readable(mangled):
    """'_ZN8pybind1112cpp_function10dispatcherE...' -> 'pybind11::cpp_function::dispatcher'."""
    rest, parts = mangled[len("_ZN"):], []
    while (n := re.match(r"\d+", rest)):
        parts.append(rest[n.end():n.end() + int(n.group())])
        rest = rest[n.end() + int(n.group()):]
    return "::".join(parts)


builtins_ = {n: getattr(torch._C, n) for n in dir(torch._C)
             if isinstance(getattr(torch._C, n), types.BuiltinFunctionType)}
shared = entry_point(torch._C._dispatch_keys)
pybind_library, pybind_mangled = symbol_name(shared)
pybind_entry = readable(pybind_mangled)
kinds = {n: "pybind11" if entry_point(f) == shared else "CPython API" for n, f in builtins_.items()}
n_pybind = sum(k == "pybind11" for k in kinds.values())
n_capi = sum(k == "CPython API" for k in kinds.values())
n_distinct_capi_entries = len({entry_point(f) for n, f in builtins_.items() if kinds[n] == "CPython API"})
has_record = {n: type(f.__self__).__name__.startswith("pybind11") for n, f in builtins_.items()}
kinds_agree = all(has_record[n] == (k == "pybind11") for n, k in kinds.items())

PAIRS = {  # (CPython API, pybind11): functions that do almost nothing
    "getter, returns a bool": ("_get_cudnn_enabled()", "_jit_get_inline_everything_mode()"),
    "setter, takes a bool": ("_set_cudnn_enabled(cudnn)", "_jit_set_inline_everything_mode(inline)"),
}
env = {"cudnn": torch._C._get_cudnn_enabled(), "inline": torch._C._jit_get_inline_everything_mode()}
env.update({s.split("(")[0]: getattr(torch._C, s.split("(")[0]) for pair in PAIRS.values() for s in pair})
for capi, pyb in PAIRS.values():
    for stmt in (capi, pyb):
        name = stmt.split("(")[0]
        expected = "CPython API" if stmt == capi else "pybind11"
        if kinds[name] != expected:
            raise RuntimeError(f"{name} is bound with {kinds[name]} in this torch, not {expected}")
stmts = [s for pair in PAIRS.values() for s in pair]
timers = {s: timeit.Timer(s, globals=env, timer=time.thread_time) for s in stmts}
for t in timers.values():
    t.timeit(1000)
times = rounds(timers, 20_000)
best = {s: min(ts) for s, ts in times.items()}
getter_capi_ns, getter_pybind_ns = (best[s] for s in PAIRS["getter, returns a bool"])
setter_capi_ns, setter_pybind_ns = (best[s] for s in PAIRS["setter, takes a bool"])
getter_ratio = ratio(times, *reversed(PAIRS["getter, returns a bool"]))
getter_extra_ns = getter_pybind_ns - getter_capi_ns
setter_ratio = ratio(times, *reversed(PAIRS["setter, takes a bool"]))

print(f"torch._C has {len(builtins_)} builtins: {n_capi} written against the CPython API "
      f"({n_distinct_capi_entries} distinct C entry points), {n_pybind} bound with pybind11")
print(f"the pybind11 ones share one entry point, {pybind_entry} in {pybind_library}; their "
      f"__self__ is pybind11's function record, and no other builtin's is: {kinds_agree}")
print("calls that do almost nothing, thread CPU time, min of 25 rounds of 20,000 calls:")
for what, (capi, pyb) in PAIRS.items():
    print(f"  {what}: CPython API {best[capi]:5.0f} ns  torch._C.{capi}")
    print(f"  {' ' * len(what)}  pybind11    {best[pyb]:5.0f} ns  torch._C.{pyb}")
print(f"pybind11 / CPython API: getter {getter_ratio:.2f}x, setter {setter_ratio:.2f}x")

"""Boxed fallbacks: one kernel per key serves every operator: the Python key's calls your mode, Conjugate's resolves a lazy conjugation.

A backend fallback is a single boxed kernel registered for a key and all operators at once; it
reads any operator's arguments from a stack, using only the schema. An operator inherits the
fallback of every key where neither it nor an alias key has a kernel: the script lists those an
operator with only a CPU kernel inherits (read from the private torch._C._dispatch_dump_table
of an operator defined here). Then watches two of them at
work with a TorchDispatchMode (torch/utils/_python_dispatch.py), whose Python key sits below
the Conjugate and Negative keys and so sees what their fallback does. z.conj() of a complex
tensor only sets a bit (the Conjugate key); the fallback (aten/src/ATen/ConjugateFallback.cpp,
logic in aten/src/ATen/native/MathBitsFallback.h) lets views through, and for other operators
clones each input that carries the bit, which resolves it, before redispatching (for an
in-place or out= call it then copies the result back into the written argument). Operators that
need no resolved copy register a fallthrough at Conjugate instead (private
torch._C._dispatch_kernel_for_dispatch_key_is_fallthrough counts them, and their schemas say
which are views); six linear-algebra kernels among them (mm, bmm, addmm, baddbmm, dot, vdot)
are called with a conjugated input, to see that it reaches them as it is and that they still
compute the right result, and so is clone, which copies the data and resolves the bit as it
copies. Whether mm's own kernel then copies is watched too: a Python "spy" stands in front of
clone's CPU kernel for one call (torch.library.Library("aten", "IMPL"), removed at once; it
calls the kernel it stands in for, fetched with the private
torch._C._dispatch_get_computed_kernel_for_dispatch_key) and counts the clones made inside
torch.mm(z.conj(), z) and inside z.mH @ z, whose conjugated operand is also transposed (the
script counts copies; it does not look inside the BLAS call). Last, the Python key: a dispatch mode adds it to
the thread-local include set. Private APIs are used as they are: if
a later torch changes them, the script fails.
"""
import re
import textwrap
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

DK = torch._C.DispatchKey
lib = torch.library.Library("fb", "DEF")
lib.define("f(Tensor x) -> Tensor")
lib.impl("f", lambda x: x.clone(), "CPU")
fallback_lines = re.findall(r"^(\w+): (fallthrough )?registered at (\S+) \[backend fallback\]$",
                            torch._C._dispatch_dump_table("fb::f"), re.M)  # private
boxed = [(key, path.split("/")[-1].split(":")[0]) for key, ft, path in fallback_lines if not ft]
fallthroughs = [key for key, ft, _ in fallback_lines if ft]
n_boxed_fallbacks, n_fallthrough_fallbacks = len(boxed), len(fallthroughs)


class Watch(TorchDispatchMode):
    """Logs each operator that reaches the Python key, and which inputs carry the conj bit."""

    def __init__(self):
        super().__init__()
        self.log = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        bits = "".join("c" if isinstance(a, torch.Tensor) and a.is_conj() else
                       "n" if isinstance(a, torch.Tensor) and a.is_neg() else ""
                       for a in args)
        self.log.append(f"{func.__name__.split('.')[0]}{'(' + bits + ')' if bits else ''}")
        return func(*args, **(kwargs or {}))


def watched(call):
    with Watch() as w:
        out = call()
    return ", ".join(w.log), out


z = torch.randn(3, 3, dtype=torch.complex64)
zc = z.conj()
conj_is_lazy = zc.is_conj() and zc.data_ptr() == z.data_ptr()
conj_keys = str(torch._C._dispatch_keys(zc))  # private
plus_log, plus_out = watched(lambda: zc + 1)
mm_log, mm_out = watched(lambda: zc @ z)
t_log, t_out = watched(lambda: zc.t())
neg = zc.imag
neg_keys = str(torch._C._dispatch_keys(neg))
neg_mul_log, neg_mul_out = watched(lambda: neg * 2)
results_right = (torch.allclose(plus_out, z.conj().resolve_conj() + 1)
                 and torch.allclose(mm_out, z.conj().resolve_conj() @ z)
                 and torch.allclose(neg_mul_out, -z.imag * 2))
plus_clones_first = plus_log.startswith("clone(c), add")
# our own operator, with only a CPU kernel, under a mode and on a conjugated input
own_log, own_out = watched(lambda: torch.ops.fb.f(zc))
own_op_served = own_log == "clone(c), f" and torch.equal(own_out, zc.resolve_conj())
mm_takes_conj_input = mm_log == "mm(c)"
view_keeps_bit = t_out.is_conj()

conj_ops = [n for n in torch._C._dispatch_get_registrations_for_dispatch_key("Conjugate")
            if n.startswith("aten::")]  # private
conj_fallthrough_ops = [n for n in conj_ops
                        if torch._C._dispatch_kernel_for_dispatch_key_is_fallthrough(n, DK.Conjugate)]
n_conj_fallthrough_ops = len(conj_fallthrough_ops)
schemas = {f"{s.name}.{s.overload_name}" if s.overload_name else s.name: s
           for s in torch._C._jit_get_all_schemas()}  # private
n_conj_fallthrough_views = sum(not schemas[n].is_mutable and
                               any(a.alias_info is not None for a in schemas[n].arguments)
                               for n in conj_fallthrough_ops)
# linear-algebra kernels that read the bit: a conjugated input reaches them as it is
v = torch.randn(3, dtype=torch.complex64)
b3 = torch.randn(2, 3, 3, dtype=torch.complex64)
vc, b3c = v.conj(), b3.conj()  # conjugated inputs, made before anything is watched
LINALG = {  # name: (the call on an input with the bit, the same on an eagerly resolved input)
    "mm": (lambda: torch.mm(zc, z), lambda: torch.mm(zc.resolve_conj(), z)),
    "bmm": (lambda: torch.bmm(b3c, b3), lambda: torch.bmm(b3c.resolve_conj(), b3)),
    "addmm": (lambda: torch.addmm(z, zc, z), lambda: torch.addmm(z, zc.resolve_conj(), z)),
    "baddbmm": (lambda: torch.baddbmm(b3, b3c, b3), lambda: torch.baddbmm(b3, b3c.resolve_conj(), b3)),
    "dot": (lambda: torch.dot(vc, v), lambda: torch.dot(vc.resolve_conj(), v)),
    "vdot": (lambda: torch.vdot(vc, v), lambda: torch.vdot(vc.resolve_conj(), v)),
}
linalg_logs = {}
linalg_right = True
for name, (with_bit, resolved) in LINALG.items():
    linalg_logs[name], out = watched(with_bit)
    linalg_right = linalg_right and torch.allclose(out, resolved())
# clone holds a fallthrough too: it copies the data, and resolves the bit as it copies
clone_log, clone_out = watched(lambda: zc.clone())
clone_resolves_itself = (clone_log == "clone(c)" and not clone_out.is_conj()
                         and torch.equal(clone_out, z.conj().resolve_conj()))
linalg_read_bit = all(linalg_logs[n] == f"{n}(c)" for n in LINALG) and linalg_right
n_linalg_read_bit = len(LINALG)
all_linalg_fallthrough = all(f"aten::{n}" in conj_fallthrough_ops for n in LINALG)


def clones_inside(call):
    """How many times clone's CPU kernel ran during `call` (a spy stands in front of it)."""
    original = torch._C._dispatch_get_computed_kernel_for_dispatch_key("aten::clone", "CPU")  # private
    count = []
    spy = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Warning only once for all operators.*")
        spy.impl("clone", lambda ks, *args, **kwargs: count.append(1) or original.call_boxed(ks, *args, **kwargs),
                 "CPU", with_keyset=True)
    try:
        out = call()
    finally:
        spy._destroy()  # ATen's kernel is back
    return len(count), out


mm_copies, mm_conj_out = clones_inside(lambda: torch.mm(zc, z))
mh_copies, mh_out = clones_inside(lambda: z.mH @ z)
mm_kernel_copies = (mm_copies >= 1 and mh_copies == 0
                    and torch.allclose(mm_conj_out, zc.resolve_conj() @ z)
                    and torch.allclose(mh_out, z.mH.resolve_conj() @ z))
with Watch():
    include_in_mode = str(torch._C._dispatch_tls_local_include_set())  # private
python_key_in_mode = "Python" in include_in_mode

print(f"an operator with only a CPU kernel inherits {n_boxed_fallbacks} boxed backend fallbacks and "
      f"{n_fallthrough_fallbacks} fallthrough ones")
n_autograd_fallbacks = sum(k.startswith("Autograd") for k, _ in boxed)
boxed_text = ", ".join(k for k, _ in boxed if not k.startswith("Autograd")) + \
    f" and {n_autograd_fallbacks} Autograd* keys"
print(textwrap.fill(boxed_text, 96, initial_indent="  boxed: ", subsequent_indent="    "))
files = dict(boxed)
print(f"  (Conjugate: {files['Conjugate']}, Negative: {files['Negative']}, Python: {files['Python']},"
      f" AutogradCPU: {files['AutogradCPU']})")
print(textwrap.fill(", ".join(fallthroughs), 96, initial_indent="  fallthrough: ",
                    subsequent_indent="    "))
print(f"z.conj(): same memory, conj bit set: {conj_is_lazy}; keys {conj_keys}")
print("below the Conjugate key a dispatch mode sees (c: input carries the conj bit):")
print(f"  z.conj() + 1      -> {plus_log}")
print(f"  z.conj() @ z      -> {mm_log}   (no fallback: mm's kernel reads the bit)")
print(f"  z.conj().t()      -> {t_log}   (a view: result keeps the bit: {view_keeps_bit})")
print(f"z.conj().imag: keys {neg_keys}")
print(f"  z.conj().imag * 2 -> {neg_mul_log}")
print(f"  fb::f(z.conj())    -> {own_log}   (our operator, CPU kernel only: served by both fallbacks: "
      f"{own_op_served})")
print(f"results equal the eagerly resolved ones: {results_right}")
print(f"{len(conj_ops)} aten ops register at Conjugate; {n_conj_fallthrough_ops} of them a fallthrough,"
      f" {n_conj_fallthrough_views} of those views")
print(f"  linear algebra with a conjugated input: {'; '.join(linalg_logs.values())}; right results: "
      f"{linalg_right}; all six hold fallthroughs: {all_linalg_fallthrough}")
print(f"  clone with a conjugated input: {clone_log}; returns a resolved copy: {clone_resolves_itself}")
print(f"inside mm's own kernel: clones for torch.mm(z.conj(), z): {mm_copies}; for z.mH @ z: {mh_copies}")
print(f"inside a TorchDispatchMode the include set is {include_in_mode}")

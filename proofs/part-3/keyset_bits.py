"""A tensor's dispatch keys are one 64-bit word: 16 backend bits below, functionality bits above.

Reads the functionality keys, in order, and the backend components from the header the
package ships (c10/core/DispatchKey.h), works out which bit each one owns, and checks that
against torch at run time: for every runtime key the dispatcher knows, the bits predicted
from the header, handed to the private torch._C.DispatchKeySet.from_raw_repr, must decode
back to that one key. The number of slots in an operator's table is one per runtime key, from
torch's own list of them at run time (private torch._C._dispatch_keyset_full), plus one for
Undefined, the empty set; it is compared with the header's own formula for it
(num_runtime_entries), computed from the header's lists: its functionality keys and the
per-backend functionalities of C10_FORALL_FUNCTIONALITY_KEYS, read from the file, not typed
in. (Python cannot read the length of the table itself.) A runtime key such as AutogradCPU is
two bits, a functionality (AutogradFunctionality) and a backend (CPU). The figure draws four key sets as rows of 64
bits, the highest bit on the left, which is also the order of priority. Uses the private
torch._C._dispatch_* functions; if a later torch renames them, the script fails.
"""
import os
import re

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Rectangle

DS = torch._C.DispatchKeySet  # private: torch._C.*
HEADER = os.path.join(os.path.dirname(torch.__file__), "include", "c10", "core", "DispatchKey.h")


def header_lists(path):
    """(backend components, functionality keys) in the order DispatchKey.h declares them."""
    code = re.sub(r"//[^\n]*", "", open(path).read())  # comments out
    backends = re.findall(r"_\((\w+), extra\)", code.split("C10_FORALL_BACKEND_COMPONENTS(_, extra)")[1]
                          .split("#define")[0])
    enum = code.split("enum class DispatchKey : uint16_t {")[1].split("EndOfFunctionalityKeys")[0]
    names = re.findall(r"^\s*(\w+)\s*[,=]", enum, re.M)
    functionalities = [n for n in names if n not in ("Undefined", "CatchAll")]
    per_backend = dict(re.findall(r"_\((\w+), ?(\w*)\)", code.split("#define C10_FORALL_FUNCTIONALITY_KEYS(_)")[1]
                                  .split("enum class")[0]))
    return backends, functionalities, per_backend


def names(ks):
    """'DispatchKeySet(CPU, AutogradCPU)' -> ['CPU', 'AutogradCPU'] (lowest priority first)."""
    inner = str(ks)[len("DispatchKeySet("):-1]
    return [k.strip() for k in inner.split(",") if k.strip()]


backends, functionalities, PER_BACKEND = header_lists(HEADER)
n_backend_bits = len(backends)
n_functionality_bits = len(functionalities)
n_bits_used = n_backend_bits + n_functionality_bits
bit_of_functionality = {f: n_backend_bits + i for i, f in enumerate(functionalities)}
bit_of_backend = {b: i for i, b in enumerate(backends)}
# PER_BACKEND: the per-backend functionalities (C10_FORALL_FUNCTIONALITY_KEYS in the header) and
# the prefix their runtime keys carry (CPU, SparseCPU, AutogradCPU, ...)
n_per_backend = len(PER_BACKEND)
n_other_functionalities = n_functionality_bits - n_per_backend
n_per_backend_slots = n_per_backend * n_backend_bits


def predicted_bits(key):
    """The bits a runtime key should own: its functionality bit, plus a backend bit if per-backend."""
    for functionality, prefix in sorted(PER_BACKEND.items(), key=lambda p: -len(p[1])):
        backend = key[len(prefix):]
        if key.startswith(prefix) and backend in bit_of_backend:
            return (1 << bit_of_functionality[functionality]) | (1 << bit_of_backend[backend])
    return 1 << bit_of_functionality[key]


runtime_keys = names(torch._C._dispatch_keyset_full())  # torch's own list, at run time
# torch decodes the bits predicted for each key back into that key, and nothing else
mismatches = [k for k in runtime_keys if names(DS.from_raw_repr(predicted_bits(k))) != [k]]
n_runtime_keys = len(runtime_keys)
runtime_rule_holds = not mismatches
# one slot per runtime key, plus one for Undefined (no keys at all): the table's length ...
table_slots = n_runtime_keys + 1
# ... which the header computes from its own lists (num_runtime_entries in DispatchKey.h): every
# functionality key, Undefined included, plus one more entry per per-backend functionality for
# each backend after the first; both counts here are read from the header, not typed in
table_slots_from_header = (n_functionality_bits + 1) + n_per_backend * (n_backend_bits - 1)
table_size_agrees = table_slots == table_slots_from_header

plain = torch.randn(3)
plain_ks = torch._C._dispatch_keys(plain)
plain_raw = plain_ks.raw_repr()
plain_hex = f"0x{plain_raw:016x}"
plain_bits = [b for b in range(64) if plain_raw >> b & 1]
n_plain_bits = len(plain_bits)
autogradcpu_raw = DS(torch._C.DispatchKey.AutogradCPU).raw_repr()
autogradcpu_bits = " + ".join(
    f for f, b in [*bit_of_functionality.items(), *bit_of_backend.items()] if autogradcpu_raw >> b & 1)
highest_plain = str(plain_ks.highestPriorityTypeId()).split(".")[-1]
with torch.inference_mode():
    inference_ks = torch._C._dispatch_keys(torch.randn(3))
meta_ks = torch._C._dispatch_keys(torch.empty(3, device="meta"))
both_backends = DS(torch._C.DispatchKey.CPU).add(torch._C.DispatchKey.Meta)
highest_cpu_and_meta = str(both_backends.highestPriorityTypeId()).split(".")[-1]

print(f"c10/core/DispatchKey.h: {n_backend_bits} backend components, "
      f"{n_functionality_bits} functionality keys -> {n_bits_used} of 64 bits used")
print(f"bits 0-{n_backend_bits - 1}: {', '.join(backends[:6])}, ... {backends[-1]}")
print(f"bits {n_backend_bits}-{n_bits_used - 1}: {', '.join(functionalities[:4])}, ... "
      f"{functionalities[-1]} (priority grows with the bit)")
print(f"{n_runtime_keys} runtime keys rebuilt from their bits, all match: {runtime_rule_holds}")
print(f"dispatch table slots per operator: {n_runtime_keys} + Undefined = {table_slots}; "
      f"num_runtime_entries from the header's formula: {table_slots_from_header}")
print(f"  = 1 for the empty set + {n_other_functionalities} functionalities with one slot each + "
      f"{n_per_backend} per-backend ones ({', '.join(PER_BACKEND)}) x {n_backend_bits} backends")
print(f"AutogradCPU alone = {autogradcpu_bits}: 0x{autogradcpu_raw:016x}")
print(f"plain CPU tensor: {plain_hex}, bits {plain_bits}")
print(f"  = {', '.join(reversed(names(plain_ks)))} (highest first); highest: {highest_plain}")
print(f"a set with both CPU and Meta backend bits picks {highest_cpu_and_meta}")

rows = {"plain CPU tensor": plain_ks.raw_repr(),
        "the key AutogradCPU alone": autogradcpu_raw,
        "tensor made in inference_mode": inference_ks.raw_repr(),
        "meta tensor": meta_ks.raw_repr()}
label_of = {b: f for f, b in bit_of_functionality.items()} | {b: f"{k} (backend)" for k, b in bit_of_backend.items()}
fig, ax = plt.subplots(figsize=(8, 4.4), layout="constrained")
for r, (label, raw) in enumerate(rows.items()):
    for bit in range(64):
        x = 63 - bit  # bit 63 on the left: the order of priority
        region = "C1" if bit < n_backend_bits else ("C0" if bit < n_bits_used else "none")
        lit = raw >> bit & 1
        ax.add_patch(Rectangle((x, -r), 0.9, 0.8, facecolor=region if lit else "none",
                               edgecolor=region if region != "none" else "C7",
                               alpha=1 if lit else 0.35, linewidth=0.6))
    ax.text(-1, -r + 0.4, label, ha="right", va="center", fontsize=9)
used = sorted({b for raw in rows.values() for b in range(64) if raw >> b & 1}, reverse=True)
label_x = []
for bit in used:  # spread the labels so that neighbouring bits stay readable
    x = 63 - bit + 0.45
    label_x.append(max(x, label_x[-1] + 3.2) if label_x else x)
for bit, lx in zip(used, label_x):
    ax.annotate(f"{bit}: {label_of[bit]}", xy=(63 - bit + 0.45, -len(rows) + 0.75),
                xytext=(lx, -len(rows) - 0.2), rotation=55, ha="right", va="top",
                fontsize=9, arrowprops=dict(arrowstyle="-", color="C7", lw=0.6))
ax.text(63 - (n_bits_used - 1) + (n_functionality_bits / 2), 1.1,
        f"functionality bits ({n_functionality_bits})", ha="center", color="C0")
ax.text(63 - (n_backend_bits - 1) + n_backend_bits / 2, 1.1, f"backend bits ({n_backend_bits})",
        ha="center", color="C1")
ax.set_xlim(-0.5, 64.5)
ax.set_ylim(-len(rows) - 3.2, 1.7)
ax.set_xticks([63 - b + 0.45 for b in (63, 48, 32, 16, 0)], ["63", "48", "32", "16", "0"])
ax.tick_params(axis="x", top=True, labeltop=True, bottom=False, labelbottom=False)
ax.set_yticks([])
for side in ("left", "right", "bottom"):
    ax.spines[side].set_visible(False)
ax.set_title("DispatchKeySet: one 64-bit word per tensor (higher bit = higher priority)",
             fontsize=10, pad=12)
plt.show()

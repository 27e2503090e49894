"""Each tensor carries a set of dispatch keys; autograd, vmap, conj and autocast are keys too.

Reads the key set of eight tensors with the private torch._C._dispatch_keys, then the
thread-local include/exclude sets: torch.autocast switches a key on by taking it out of the
exclude set, inference_mode changes both sets, and no_grad changes neither (it sets a
thread-local grad-mode flag, c10/core/GradMode.h). The dispatcher runs the highest-priority
key of ((tensor keys | TLS include) - TLS exclude) & the operator's non-fallthrough keys
(aten/src/ATen/core/dispatch/DispatchKeyExtractor.h); the private
torch._C._dispatch_dump_table shows which keys of aten::add and aten::add_ are fallthroughs.
The figure orders keys by priority. The private APIs are used as they are: if a later torch
moves them, this script fails rather than print something else.
"""
import torch
import matplotlib.pyplot as plt
from matplotlib.patches import Patch, Rectangle

torch.manual_seed(0)


def key_set(t):
    """The tensor's DispatchKeySet."""
    return torch._C._dispatch_keys(t)  # private: torch._C._*


def tls_sets():
    """Thread-local (include, exclude) DispatchKeySets."""
    return (torch._C._dispatch_tls_local_include_set(),  # private: torch._C._*
            torch._C._dispatch_tls_local_exclude_set())


def fallthrough_keys(op):
    """The keys whose kernel for `op` is a fallthrough, from the private dispatch table dump."""
    table = torch._C._dispatch_dump_table(op)  # private; lines like 'Key: fallthrough registered at ...'
    return {line.split(":")[0] for line in table.splitlines() if ": fallthrough registered" in line}


def kernels_run(op, keys, include, exclude):
    """The keys whose kernels run for `op`, highest priority first: each redispatches to the next."""
    live = [k for k in reversed(names(keys | include)) if k not in names(exclude)]
    return [k for k in live if k not in fallthrough_keys(op)]


def names(ks):
    """'DispatchKeySet(CPU, AutogradCPU)' -> ['CPU', 'AutogradCPU'] (lowest priority first)."""
    inner = str(ks)[len("DispatchKeySet("):-1]
    return [k.strip() for k in inner.split(",") if k.strip()]


def build_zoo():
    """Eight tensors, each paired with the TLS exclude set in force where it was looked at."""
    zoo = {}
    _, exclude = tls_sets()
    plain = torch.randn(4)
    zoo["plain CPU float"] = (key_set(plain), exclude)
    zoo["requires_grad=True"] = (key_set(torch.randn(4, requires_grad=True)), exclude)
    with torch.inference_mode():
        zoo["made in inference_mode"] = (key_set(torch.randn(4)), exclude)
    zoo["meta (no data)"] = (key_set(torch.empty(4, device="meta")), exclude)
    zoo["sparse COO"] = (key_set(torch.randn(4, 4).to_sparse()), exclude)
    z = torch.randn(4, dtype=torch.complex64)
    zoo["z.conj()"] = (key_set(z.conj()), exclude)  # lazy: a bit, no copy
    zoo["z.conj().imag"] = (key_set(z.conj().imag), exclude)  # lazy negation

    def peek(t):  # runs inside vmap: t is the batched wrapper tensor
        zoo["inside vmap"] = (key_set(t), tls_sets()[1])
        return t * 2

    torch.func.vmap(peek)(torch.randn(3, 4))
    return zoo


def autocast_demo():
    """Exclude set and mm's output dtype inside torch.autocast('cpu', bfloat16)."""
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, exclude = tls_sets()
        out = torch.mm(a, b)
    return exclude, str(out.dtype)


zoo = build_zoo()
include_default, exclude_default = tls_sets()
exclude_autocast, autocast_dtype = autocast_demo()
n_tensors = len(zoo)
with torch.no_grad():
    no_grad_changes_tls = tls_sets() != (include_default, exclude_default)
with torch.inference_mode():
    include_inference, exclude_inference = tls_sets()
inference_mode_changes_tls = (include_inference, exclude_inference) != (include_default, exclude_default)
inference_include = ", ".join(names(include_inference))
inference_excludes_autograd = "AutogradOther" in names(exclude_inference)

# Which kernels run for a + b and a.add_(b) on plain CPU tensors, after the fallthrough mask.
plain = zoo["plain CPU float"][0]
add_runs = ", ".join(kernels_run("aten::add.Tensor", plain, include_default, exclude_default))
add_inplace_runs = ", ".join(kernels_run("aten::add_.Tensor", plain, include_default, exclude_default))
live_for_add = set(names(plain | include_default)) - set(names(exclude_default))
add_fallthroughs = ", ".join(sorted(fallthrough_keys("aten::add.Tensor") & live_for_add))  # what the mask drops
plain_keys = str(zoo["plain CPU float"][0])
grad_same_as_plain = zoo["requires_grad=True"][0] == zoo["plain CPU float"][0]
inference_keys = str(zoo["made in inference_mode"][0])
meta_keys = str(zoo["meta (no data)"][0])
sparse_keys = str(zoo["sparse COO"][0])
vmap_keys = str(zoo["inside vmap"][0])
tls_include = str(include_default)
n_plain_keys = len(names(zoo["plain CPU float"][0]))
# the same sets as prose, highest priority first (the order the dispatcher tries them)
plain_by_priority = ", ".join(reversed(names(zoo["plain CPU float"][0])))
inference_by_priority = ", ".join(reversed(names(zoo["made in inference_mode"][0])))
n_excluded_default = len(names(exclude_default))
n_excluded_autocast = len(names(exclude_autocast))
autocast_cpu_left_exclude = ("AutocastCPU" in names(exclude_default)
                             and "AutocastCPU" not in names(exclude_autocast))

print(f"torch {torch.__version__}; key sets via private torch._C._dispatch_keys,")
print("each listed lowest priority first")
for label, (ks, _) in zoo.items():
    print(f"  {label:23s} {', '.join(names(ks))}")
print(f"requires_grad changes the key set: {not grad_same_as_plain}"
      " (autograd key is on every normal tensor)")
print(f"TLS include (always added):  {', '.join(names(include_default))}")
kinds = sorted({"Autocast*" if k.startswith("Autocast") else k
                for k in names(exclude_default)})
print(f"TLS exclude (always removed): {n_excluded_default} keys: {', '.join(kinds)}")
print(f"inside autocast: {n_excluded_autocast} excluded; AutocastCPU left the exclude set:"
      f" {autocast_cpu_left_exclude}")
print(f"torch.mm of two float32 tensors inside autocast returns {autocast_dtype}")
print(f"no_grad changes the TLS sets: {no_grad_changes_tls} (it flips a grad-mode flag instead)")
print(f"inference_mode changes the TLS sets: {inference_mode_changes_tls}: include {inference_include};")
print(f"  exclude adds the autograd keys: {inference_excludes_autograd}")
print(f"keys of a + b whose aten::add kernel is a fallthrough (the mask drops them): {add_fallthroughs}")
print(f"kernels that run for a + b:      {add_runs}")
print(f"kernels that run for a.add_(b):  {add_inplace_runs}")

# One set holding every key seen: its string lists keys in priority order (lowest first).
seen = {k for ks, _ in zoo.values() for k in names(ks)}
union = None
for ks, _ in zoo.values():
    union = ks if union is None else union | ks
# The union may invent combinations (e.g. SparseMeta); keep only keys a tensor really has.
columns = [k for k in reversed(names(union)) if k in seen]  # highest priority first
print(f"{len(columns)} distinct keys; highest priority {columns[0]}, lowest {columns[-1]}")
n_distinct_keys = len(columns)

fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
add_skips = fallthrough_keys("aten::add.Tensor")
for row, (ks, exclude) in enumerate(zoo.values()):
    masked = set(names(exclude))
    for col, key in enumerate(columns):
        if key in names(ks):
            style = dict(facecolor="C0", edgecolor="C0")  # live: its kernel may run
            if key in masked:
                style = dict(facecolor="none", edgecolor="C1", hatch="///")
            elif key in add_skips:
                style = dict(facecolor="none", edgecolor="C0", linestyle=":", linewidth=1.5)
            ax.add_patch(Rectangle((col - 0.42, row - 0.38), 0.84, 0.76, **style))
ax.set_xlim(-0.5, len(columns) - 0.5)
ax.set_ylim(n_tensors - 0.5, -0.5)
ax.set_xticks(range(len(columns)), columns, rotation=35, ha="right")
ax.set_yticks(range(n_tensors), list(zoo))
ax.set_xlabel("dispatch key, highest priority (runs first) on the left")
fig.legend(handles=[Patch(facecolor="C0", edgecolor="C0", label="in the tensor's key set"),
                    Patch(facecolor="none", edgecolor="C0", linestyle=":", linewidth=1.5,
                          label="in the set, a fallthrough for aten::add"),
                    Patch(facecolor="none", edgecolor="C1", hatch="///",
                          label="masked by the TLS exclude set")],
           loc="outside lower center", ncols=3, fontsize=9)
ax.set_title("Which dispatch keys each tensor carries")
plt.show()

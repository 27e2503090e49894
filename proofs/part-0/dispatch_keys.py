"""Every tensor carries a set of dispatch keys: features such as autograd, vmap and conjugation are keys.

Reads the key set of eight tensors with the private torch._C._dispatch_keys and the
thread-local include and exclude sets, then applies the dispatcher's rule to a + b: the
highest-priority key of ((tensor keys | include) - exclude) & the operator's non-fallthrough
keys (aten/src/ATen/core/dispatch/DispatchKeyExtractor.h), where the private
torch._C._dispatch_dump_table says which of aten::add's keys are fallthroughs. What the rule
says ran is then observed where it leaves a trace: the in-place add bumps the version counter,
and with ADInplaceOrView excluded (the private torch._C._ExcludeDispatchKeyGuard) it does not, so
that key's kernel is what bumps it; an input that requires grad gets its result a grad_fn, and with AutogradCPU
excluded it does not, so the autograd key's kernel is what records it. The first figure orders keys by priority; the second draws
aten::add's and aten::add_'s rows of the dispatch table, cell by cell as the rule reads them. The private APIs are used as they are: if a later
torch moves them, this script fails rather than print something else.
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


zoo = build_zoo()
include_default, exclude_default = tls_sets()
n_tensors = len(zoo)
plain = zoo["plain CPU float"][0]
plain_by_priority = ", ".join(reversed(names(plain)))  # highest priority first, as dispatch tries them
include_by_priority = ", ".join(reversed(names(include_default)))
n_excluded_default = len(names(exclude_default))
excluded_all_autocast = all(k.startswith("Autocast") for k in names(exclude_default))
grad_same_as_plain = zoo["requires_grad=True"][0] == plain

# The rule applied to aten::add's table: which kernels a + b and a.add_(b) reach on plain tensors.
live_for_add = set(names(plain | include_default)) - set(names(exclude_default))
add_fallthroughs = ", ".join(k for k in reversed(names(plain | include_default))
                             if k in live_for_add and k in fallthrough_keys("aten::add.Tensor"))
add_runs = ", ".join(kernels_run("aten::add.Tensor", plain, include_default, exclude_default))
add_inplace_runs = ", ".join(kernels_run("aten::add_.Tensor", plain, include_default, exclude_default))

# What those kernels leave behind, observed. add_ bumps the version counter (the private
# _version); with ADInplaceOrView excluded it does not, so that key's kernel is what bumps it.
# The autograd kernel records a node (grad_fn) when an input requires grad.
a, b = torch.randn(4), torch.randn(4)
c = a + b
version_before = a._version
a.add_(b)
inplace_bumped_version = a._version == version_before + 1
no_view_key = torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView)
version_before = a._version
with torch._C._ExcludeDispatchKeyGuard(no_view_key):  # private: torch._C._*
    a.add_(b)
bumped_without_view_key = a._version != version_before
g = torch.randn(4, requires_grad=True)
autograd_recorded = (g + b).grad_fn is not None and c.grad_fn is None
no_autograd_key = torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradCPU)
with torch._C._ExcludeDispatchKeyGuard(no_autograd_key):  # private: torch._C._*
    recorded_without_autograd_key = (g + b).grad_fn is not None

print(f"torch {torch.__version__}; key sets via private torch._C._dispatch_keys,")
print("each listed highest priority first (the order the dispatcher tries them)")
for label, (ks, _) in zoo.items():
    print(f"  {label:23s} {', '.join(reversed(names(ks)))}")
print(f"requires_grad changes the key set: {not grad_same_as_plain}"
      " (the autograd key is on every ordinary tensor)")
print(f"thread-local include set (always added):   {include_by_priority}")
print(f"thread-local exclude set (always removed): {n_excluded_default} keys, all Autocast*: "
      f"{excluded_all_autocast}")
print(f"a + b on plain tensors: the mask drops the fallthroughs {add_fallthroughs};")
print(f"  kernels the rule leaves, in order: {add_runs}")
print(f"a.add_(b): kernels the rule leaves, in order: {add_inplace_runs}")
print(f"a.add_(b) bumped a's version counter: {inplace_bumped_version}; "
      f"with ADInplaceOrView excluded it bumped it: {bumped_without_view_key}")
print(f"with an input that requires grad, a + b recorded a node (AutogradCPU ran): {autograd_recorded}; "
      f"with AutogradCPU excluded it recorded one: {recorded_without_autograd_key}")

# One set holding every key seen: its string lists keys in priority order (lowest first).
seen = {k for ks, _ in zoo.values() for k in names(ks)}
union = None
for ks, _ in zoo.values():
    union = ks if union is None else union | ks
# The union may invent combinations (e.g. SparseMeta); keep only keys a tensor really has.
columns = [k for k in reversed(names(union)) if k in seen]  # highest priority first
print(f"{len(columns)} distinct keys; highest priority {columns[0]}, lowest {columns[-1]}")
n_distinct_keys = len(columns)

fig, ax = plt.subplots(figsize=(8, 4.0), layout="constrained")
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
                          label="removed by the thread-local exclude set")],
           loc="outside lower center", ncols=3, fontsize=9)
ax.set_title("Which dispatch keys each tensor carries")
plt.show()

# Figure 2 of this card: one operator's row of the dispatch table, as the rule reads it for plain
# CPU tensors. Each cell is one key of (tensor keys | include set); what the rule does with it.
live_keys = list(reversed(names(plain | include_default)))  # highest priority first
rows = {"a + b\nadd.Tensor": "aten::add.Tensor", "a.add_(b)\nadd_.Tensor": "aten::add_.Tensor"}
fig, ax = plt.subplots(figsize=(8, 2.3), layout="constrained")
for row, op in enumerate(rows.values()):
    skips, runs = fallthrough_keys(op), kernels_run(op, plain, include_default, exclude_default)
    for col, key in enumerate(live_keys):
        if key in names(exclude_default):
            style, text = dict(facecolor="none", edgecolor="C1", hatch="///"), "excluded"
        elif key in skips:
            style, text = dict(facecolor="none", edgecolor="C0", linestyle=":", linewidth=1.5), "fallthrough"
        else:
            style, text = dict(facecolor="C0", edgecolor="C0", alpha=0.35), f"kernel runs\n{runs.index(key) + 1}."
        ax.add_patch(Rectangle((col - 0.45, row - 0.36), 0.9, 0.72, **style))
        ax.text(col, row, text, ha="center", va="center", fontsize=8)
    cols = [live_keys.index(k) for k in runs]
    for start, end in zip(cols, cols[1:]):
        ax.annotate("", xy=(end - 0.46, row + 0.25), xytext=(start + 0.46, row + 0.25),
                    arrowprops=dict(arrowstyle="->", color="C3", connectionstyle="arc3,rad=0.25"))
ax.set_xlim(-0.5, len(live_keys) - 0.5)
ax.set_ylim(len(rows) - 0.5, -0.5)
ax.set_xticks(range(len(live_keys)), live_keys, fontsize=7.5)
ax.set_yticks(range(len(rows)), list(rows), fontsize=8, family="monospace")
ax.set_xlabel("keys of plain CPU tensors plus the include set, highest priority first\n"
              "red arrows: each kernel that runs calls the operator again, down to the next", fontsize=8)
ax.set_title("Two operators' rows of the dispatch table, read by the rule")
plt.show()

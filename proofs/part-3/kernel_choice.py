"""The rule, call after call: which kernels each call runs, predicted from the tables, then watched.

Applies the rule of aten/src/ATen/core/dispatch/DispatchKeyExtractor.h to ten calls:
((keys of the tensor arguments | thread-local include) - thread-local exclude), then drop the
keys whose slot in this operator's table is a fallthrough. Reads the tensors' keys with the
private torch._C._dispatch_keys, the thread-local sets with
torch._C._dispatch_tls_local_include_set / _exclude_set (read inside each call's context:
no_grad, inference_mode, autocast), and the table with
torch._C._dispatch_dump_table, and predicts the chain of kernels: the keys left, highest
first, down to the backend's kernel, a composite kernel (which calls other operators instead),
or a BackendSelect kernel (which hands the call to the device's key).

Then it watches each real call. A Python "spy" stands in front of the kernel in every slot of
the predicted chain, and in every other column of the table whose slot holds a kernel
registered there or a boxed fallback (so that a kernel running off the chain would be seen;
slots that fall through, or are filled from an alias key, are left alone, since a spy there
would change the table), for the length of one call (torch.library.Library("aten", "IMPL"),
removed at once, which puts ATen's kernels back); each spy notes its key, the key set the
dispatcher handed it, grad mode, and its inputs' dtypes, and calls the kernel it stands in for
(private torch._C._dispatch_get_computed_kernel_for_dispatch_key), so the call does what it
always does. The order of the spies' notes is the chain as it ran, compared link by link with
the prediction. For the two composites a spy at the kernel they end in (addmm's, mm's CPU
slot) records what reaches it, and a dispatch mode, run alone, lists the operators that reach
the Python key below them. Last, the real calls with ATen's kernels: add_ bumps the private
_version counter, autocast returns bfloat16, x * 2 records a node only with grad mode on. Figure
1's other two operators, relu and mse_loss, are watched the same way, outside the table. The
figure draws each call as a row of the dispatch table: the slots that ran, numbered, over
the kind of kernel each slot holds. Private APIs are used as they are: if a later torch
changes them, the script fails.
"""
import contextlib
import re
import warnings

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from matplotlib.patches import Rectangle
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, documented

BACKEND_KERNEL_KEYS = {"CPU", "Meta"}
KEYS = ["AutocastCPU", "AutogradCPU", "ADInplaceOrView", "Conjugate", "Python", "BackendSelect",
        "SparseCPU", "Meta", "CPU"]  # the dispatch table's columns
ALIAS_TAGS = {"autograd kernel": "Autograd", "math kernel": "CI", "default backend kernel": "CE"}


def names(ks):
    """'DispatchKeySet(CPU, AutogradCPU)' -> ['CPU', 'AutogradCPU'] (lowest priority first)."""
    inner = str(ks)[len("DispatchKeySet("):-1]
    return [k.strip() for k in inner.split(",") if k.strip()]


def table(op_name):
    """{key: (tag, is_fallthrough, file)} of the operator's computed table (private dump)."""
    found = re.findall(r"^(\w+): (fallthrough )?registered at (\S+) \[(.+)\]$",
                       torch._C._dispatch_dump_table(op_name), re.M)
    return {key: (tag, bool(ft), path) for key, ft, path, tag in found}


def step_text(key, tag, path):
    """One link of a chain: the key, and where its slot's kernel came from."""
    if key.startswith("Autocast"):
        return f"{key} [casts, calls again]"
    if tag == "math kernel":
        return f"{key} [CI: calls other operators]"
    if tag == "backend fallback":
        return f"{key} [boxed fallback]"
    if tag in ALIAS_TAGS:
        return f"{key} [{ALIAS_TAGS[tag]}]"
    if path.rsplit(":", 1)[0].endswith(".py"):
        return f"{key} [Python kernel]"
    return key


def tensor_keys(args):
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.Undefined)
    for arg in args:
        if isinstance(arg, torch.Tensor):
            keys = keys | torch._C._dispatch_keys(arg)  # private
    return keys


def predict(op_name, args, device_key):
    """(keys in play, keys excluded, the set that reaches the table, the chain: [(key, text)])."""
    in_play = tensor_keys(args) | torch._C._dispatch_tls_local_include_set()  # private
    exclude = names(torch._C._dispatch_tls_local_exclude_set())  # private
    entries = table(op_name)
    reaching = [k for k in names(in_play) if k not in exclude and not entries.get(k, ("", False))[1]]
    chain = []
    for key in reversed(reaching):  # highest priority first
        tag, _, path = entries[key]
        chain.append((key, step_text(key, tag, path)))
        if key == "BackendSelect" and tag == "kernel":  # it hands the call to the device's key
            tag, _, path = entries[device_key]
            chain.append((device_key, step_text(device_key, tag, path)))
            break
        if tag == "math kernel" or key in BACKEND_KERNEL_KEYS:
            break
    excluded = [k for k in names(in_play) if k in exclude]
    return names(in_play), excluded, sorted(reaching), chain


@contextlib.contextmanager
def spies(op, keys, log):
    """Stands a Python kernel in front of ATen's at each key, for one call; ATen's come back after."""
    lib = torch.library.Library("aten", "IMPL")
    packet, _, overload = op.partition(".")
    schema = getattr(getattr(torch.ops.aten, packet), overload or "default")._schema
    for key in keys:
        original = torch._C._dispatch_get_computed_kernel_for_dispatch_key(f"aten::{op}", key)  # private

        def kernel(keyset, *args, _key=key, _original=original, **kwargs):
            log.append({"op": op, "key": _key, "handed": sorted(names(keyset)),
                        "grad_mode": torch.is_grad_enabled(),
                        "excluded": names(torch._C._dispatch_tls_local_exclude_set()),  # private
                        "dtypes": sorted({str(a.dtype).split(".")[-1] for a in args
                                          if isinstance(a, torch.Tensor)})})
            # a Python kernel is handed a wrapped number as the Python number: give it back as a tensor
            args = [torch.tensor(v) if str(arg.type) == "Tensor" and isinstance(v, (int, float)) else v
                    for arg, v in zip(schema.arguments, args)]
            return _original.call_boxed(keyset, *args, **kwargs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*(Overriding a previously registered kernel|"
                                                      "Warning only once for all operators).*")
            lib.impl(op, kernel, key, with_keyset=True)
    try:
        yield
    finally:
        lib._destroy()


class Ops(TorchDispatchMode):
    """The operators that reach the Python key, below autograd and below composites."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func.__name__.split(".")[0])
        return func(*args, **(kwargs or {}))


a, b = torch.randn(4), torch.randn(4)
x = torch.randn(2, 4, requires_grad=True)
w, bias = torch.randn(3, 4, requires_grad=True), torch.randn(3, requires_grad=True)
m = torch.randn(8, 8)
z = torch.randn(4, dtype=torch.complex64)
zc = z.conj()
with torch.inference_mode():
    ai, bi = torch.randn(4), torch.randn(4)
meta = torch.empty(4, device="meta")
autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
nothing = contextlib.nullcontext
CASES = {  # call: (overload it becomes, its arguments, the call, context, spy at the kernel it ends in)
    "a + b": ("add.Tensor", (a, b), lambda: a + b, nothing, None),
    "x * 2 (x requires grad)": ("mul.Tensor", (x,), lambda: x * 2, nothing, None),
    "x * 2 under no_grad": ("mul.Tensor", (x,), lambda: x * 2, torch.no_grad, None),
    "ai + bi in inference_mode": ("add.Tensor", (ai, bi), lambda: ai + bi, torch.inference_mode, None),
    "a.add_(b)": ("add_.Tensor", (a, b), lambda: a.add_(b), nothing, None),
    "F.linear(x, w, bias)": ("linear", (x, w, bias), lambda: F.linear(x, w, bias), nothing,
                             ("addmm", "CPU")),
    "m @ m under autocast": ("matmul", (m, m), lambda: m @ m, autocast, ("mm", "CPU")),
    "z.conj() + z": ("add.Tensor", (zc, z), lambda: zc + z, nothing, None),
    "torch.zeros(3)": ("zeros", (), lambda: torch.zeros(3), nothing, None),
    "meta + meta": ("add.Tensor", (meta, meta), lambda: meta + meta, nothing, None),
}


def off_chain(op_name, chain_keys):
    """The table's other columns whose slot holds a kernel registered there or a boxed fallback.

    Spies stand there too, so that a kernel running outside the predicted chain would show up.
    Slots that fall through are left alone (a spy there would change the operator's mask), and
    so are slots filled from an alias key (a kernel registered at a backend key would take a
    composite out of the autograd slot), and the Python key's."""
    entries = table(op_name)
    return [k for k in KEYS if k not in chain_keys and k != "Python" and k in entries
            and not entries[k][1] and entries[k][0] in ("kernel", "backend fallback")]


predicted, watched, first_handed, at_end, below, bystanders = {}, {}, {}, {}, {}, {}
for label, (op, args, call, context, end) in CASES.items():
    with context():
        device = call().device.type  # the real call, with ATen's kernels: where its result lives
        predicted[label] = predict(f"aten::{op}", args, torch._C._dispatch_key_for_device(device))
        chain_keys = [key for key, _ in predicted[label][3]]
        bystanders[label] = off_chain(f"aten::{op}", chain_keys)
        log = []
        with spies(op, chain_keys + bystanders[label], log), \
                (spies(*end[:1], end[1:], log) if end else nothing()):
            call()
    watched[label] = [n["key"] for n in log if n["op"] == op]
    first_handed[label] = log[0]["handed"]
    ends = [n for n in log if n["op"] != op]
    at_end[label] = ends[-1] if ends else [n for n in log if n["op"] == op][-1]
    if end:
        with Ops() as ops:  # alone: what reaches the Python key below the composite
            call()
        below[label] = ", ".join(ops.seen)

n_cases = len(CASES)
# Figure 1's other operators, relu and mse_loss, watched the same way: a + b's chain?
h, target = torch.randn(4, requires_grad=True), torch.randn(4)
figure1_others = {}
for op, args, call in (("relu", (h,), lambda: F.relu(h)),
                       ("mse_loss", (h, target), lambda: F.mse_loss(h, target))):
    chain = predict(f"aten::{op}", args, "CPU")[3]
    log = []
    with spies(op, [key for key, _ in chain], log):
        call()
    figure1_others[op] = ([n["key"] for n in log], [key for key, _ in chain])
figure1_others_like_plain = all(watched_keys == predicted_keys == watched["a + b"]
                                for watched_keys, predicted_keys in figure1_others.values())
# Every link of every chain, as it ran, is the predicted one, and the first kernel was handed
# exactly the set the rule gives:
chains_watched = all(watched[k] == [key for key, _ in predicted[k][3]] for k in CASES)
n_bystander_spies = sum(len(v) for v in bystanders.values())  # spies off the chains: none may run
first_sets_match = all(first_handed[k] == predicted[k][2] for k in CASES)
chain_text = {k: " → ".join(text for _, text in predicted[k][3]) for k in CASES}
plain_chain = chain_text["a + b"]
grad_on_chain, no_grad_chain = chain_text["x * 2 (x requires grad)"], chain_text["x * 2 under no_grad"]
inference_chain = chain_text["ai + bi in inference_mode"]
inplace_chain = chain_text["a.add_(b)"]
linear_chain, autocast_chain = chain_text["F.linear(x, w, bias)"], chain_text["m @ m under autocast"]
conj_chain = chain_text["z.conj() + z"]
zeros_chain, meta_chain = chain_text["torch.zeros(3)"], chain_text["meta + meta"]
linear_below, autocast_below = below["F.linear(x, w, bias)"], below["m @ m under autocast"]
plain_excluded = ", ".join(predicted["a + b"][1])

# no_grad: the same chain as with grad mode on; the autograd kernel ran, and records only with grad mode on.
no_grad_same_chain = watched["x * 2 under no_grad"] == watched["x * 2 (x requires grad)"]
with torch.no_grad():
    no_grad_records = (x * 2).grad_fn is not None
grad_on_records = (x * 2).grad_fn is not None
# the real calls with ATen's kernels:
version_before = a._version  # private attribute: the version counter ADInplaceOrView bumps
a.add_(b)
inplace_bumped_version = a._version == version_before + 1
with autocast():
    autocast_ran = (m @ m).dtype == torch.bfloat16
autocast_end = at_end["m @ m under autocast"]
autocast_reached_mm = (autocast_end["dtypes"] == ["bfloat16"] and "AutocastCPU" in autocast_end["excluded"])
inference_no_autograd = not any(k.startswith("Autograd") for k in watched[
    "ai + bi in inference_mode"])

for label, (keys, excluded, reaching, chain) in predicted.items():
    print(f"{label:26s} aten::{CASES[label][0]}")
    print(f"    keys in play: {', '.join(reversed(keys)) or '-'}; excluded: {', '.join(excluded) or '-'}")
    print(f"    predicted: {chain_text[label]}")
    print(f"    watched:   {' → '.join(watched[label])}; first kernel handed "
          f"{{{', '.join(first_handed[label])}}}" + (f"; below it: {below[label]}" if label in below else ""))
print(f"Figure 1's relu and mse_loss ran a + b's chain, as predicted: {figure1_others_like_plain}")
print(f"every link of all {n_cases} chains ran as predicted, and none of the {n_bystander_spies} spies "
      f"off the chains ran: {chains_watched}; each first kernel was handed the predicted set: {first_sets_match}")
print(f"x * 2: same chain with and without no_grad: {no_grad_same_chain}; records a node with grad "
      f"mode on: {grad_on_records}, under no_grad: {no_grad_records}")
print(f"m @ m under autocast: mm's CPU kernel got {'/'.join(autocast_end['dtypes'])} inputs, "
      f"AutocastCPU excluded: {'AutocastCPU' in autocast_end['excluded']}; result bfloat16: {autocast_ran}")
print(f"a.add_(b) bumped the version counter: {inplace_bumped_version}")

# The figure: each call as a row of the dispatch table, the slots that ran numbered.
REFUSING_FILES = ("MetaFallbackKernel.cpp", "VariableFallbackKernel.cpp")


def kind(entry):
    if entry is None:
        return "empty"
    tag, fallthrough, path = entry
    if fallthrough:
        return "fallthrough"
    if tag in ("default backend kernel", "math kernel", "autograd kernel"):
        return "alias"
    if tag == "backend fallback":
        return "refusing fallback" if path.rsplit(":", 1)[0].endswith(REFUSING_FILES) else "fallback"
    return "kernel"


STYLE = {"kernel": dict(facecolor="C0", edgecolor="C0"),
         "alias": dict(facecolor="C2", edgecolor="C2"),
         "fallback": dict(facecolor="C4", edgecolor="C4"),
         "refusing fallback": dict(facecolor="none", edgecolor="C4", hatch="xx"),
         "fallthrough": dict(facecolor="none", edgecolor="C7", hatch="////"),
         "empty": dict(facecolor="none", edgecolor="C7", linestyle=":")}
fig, ax = plt.subplots(figsize=(8, 5.6), layout="constrained")
for row, (label, (op, args, *_)) in enumerate(CASES.items()):
    entries = table(f"aten::{op}")
    keys, excluded, _, _ = predicted[label]
    on_meta = "meta" in label
    for col, column in enumerate(KEYS):
        key = "AutogradMeta" if on_meta and column == "AutogradCPU" else column
        in_play = key in keys or key in watched[label]  # (a BackendSelect kernel hands on the device's key)
        ax.add_patch(Rectangle((col - 0.42, row - 0.38), 0.84, 0.76, linewidth=1,
                               alpha=1 if in_play else 0.18, **STYLE[kind(entries.get(key))]))
        if key in excluded:
            ax.text(col, row, "×", ha="center", va="center", fontsize=13, color="C3", fontweight="bold")
        if key in watched[label]:
            ax.plot(col, row, "o", markersize=12, color="C1", zorder=5)
            ax.text(col, row, str(watched[label].index(key) + 1), ha="center", va="center", fontsize=8,
                    color="white", fontweight="bold", zorder=6)
ax.set_xlim(-0.5, len(KEYS) - 0.5)
ax.set_ylim(len(CASES) - 0.5, -0.5)
ax.set_xticks(range(len(KEYS)), [k if k != "AutogradCPU" else "AutogradCPU\n(Meta: AutogradMeta)"
                                  for k in KEYS], rotation=35, ha="right", fontsize=8)
ax.set_yticks(range(len(CASES)), [f"{k}  ({CASES[k][0]})" for k in CASES], fontsize=8)
ax.set_title("Each call as a row of its operator's table: numbered slots ran, × excluded,\n"
             "faint: key not in play; colours as in the dispatch table", fontsize=9)
plt.show()

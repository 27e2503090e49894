"""__torch_function__ sees the Python calls you wrote, __torch_dispatch__ the ATen ops that ran.

Runs relu(linear(x, w)).sum() once with a TorchFunctionMode and a TorchDispatchMode both
active; each only logs the call and runs it unchanged, so every ATen op can be filed under
the Python call that caused it. TorchDispatchMode lives in torch.utils._python_dispatch: an
underscore module, documented for extending PyTorch. A function mode sees a call before any
ATen operator runs (for a builtin such as torch.relu, the generated binding has already parsed
the arguments); a dispatch mode sees operators after autograd and after CompositeImplicitAutograd
operators such as linear decomposed. Also prints one operator's schema and the overloads of
aten::add: ATen's own, declared in native_functions.yaml, take tensors; TorchScript registers
more under the same name (torch/csrc/jit/runtime/register_prim_ops.cpp) for ints, floats,
strings and lists. Counts the operators registered with the dispatcher (private
torch._C._dispatch_get_all_op_names, which fails loudly if it is gone; counted right after
import; the counts drift between releases).
"""
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

torch.manual_seed(0)


def count_ops():
    """(all registered operator overloads, the aten:: ones); an AttributeError if the API moved."""
    names = torch._C._dispatch_get_all_op_names()  # private: torch._C._*
    return len(names), sum(n.startswith("aten::") for n in names)


n_ops, n_aten_ops = count_ops()  # before the modes below lazily import more libraries


class DispatchLog(TorchDispatchMode):
    """Sees each ATen operator the dispatcher reaches, after autograd and decompositions."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)  # an OpOverload such as aten.mm.default
        return func(*args, **(kwargs or {}))


class FunctionLog(TorchFunctionMode):
    """Sees each call at the Python API, before any ATen op runs; files the ATen ops under it."""

    def __init__(self, dispatch_log):
        super().__init__()
        self.dispatch_log = dispatch_log
        self.calls = []  # (python name, [OpOverload, ...])

    def __torch_function__(self, func, types, args=(), kwargs=None):
        start = len(self.dispatch_log.ops)
        out = func(*args, **(kwargs or {}))  # this mode is off inside, so no nesting
        self.calls.append((func.__name__, self.dispatch_log.ops[start:]))
        return out


def model(x, w):
    return F.relu(F.linear(x, w)).sum()


def trace(x, w):
    """[(Python call name, [ATen ops it ran]), ...] for one run of model(x, w)."""
    with DispatchLog() as dmode, FunctionLog(dmode) as fmode:
        model(x, w)
    return fmode.calls


def short(op):
    return op.__name__.split(".")[0]  # 'mm.default' -> 'mm'


x = torch.randn(4, 8, requires_grad=True)
w = torch.randn(3, 8)
calls = trace(x, w)
calls_no_grad = trace(x.detach(), w)  # same code, nothing requires grad

aten_ops = [op for _, ops in calls for op in ops]
function_log = ", ".join(name for name, _ in calls)
dispatch_log = ", ".join(short(op) for op in aten_ops)
dispatch_log_full = ", ".join(str(op) for op in aten_ops)
dispatch_log_no_grad = ", ".join(short(op) for _, ops in calls_no_grad for op in ops)
n_function_calls = len(calls)
n_aten_calls = len(aten_ops)
add_schema = str(torch.ops.aten.add.Tensor._schema)
n_add_overloads = len(torch.ops.aten.add.overloads())
add_overloads = [getattr(torch.ops.aten.add, name)._schema for name in torch.ops.aten.add.overloads()]
# ATen's overloads take a Tensor; TorchScript's (register_prim_ops.cpp) take none.
add_script_overloads = ", ".join(f"add.{s.overload_name}" if s.overload_name else "add" for s in add_overloads
                                 if not any("Tensor" in str(a.type) for a in s.arguments))
n_add_tensor_overloads = sum(any("Tensor" in str(a.type) for a in s.arguments) for s in add_overloads)
n_ops_after_modes, _ = count_ops()

print("relu(linear(x, w)).sum() with x.requires_grad=True, no bias")
print(f"  {'TorchFunctionMode (Python API)':32s}TorchDispatchMode (ATen)")
for name, ops in calls:
    print(f"  {name:30s}->  {', '.join(str(op) for op in ops)}")
print(f"{n_function_calls} Python calls, {n_aten_calls} ATen calls: linear is composite (t + mm);")
print("  detach is autograd saving relu's output for backward")
print(f"same code, nothing requires grad: {dispatch_log_no_grad}")
print(f"schema: {add_schema}")
print(f"aten::add has {n_add_overloads} overloads; {n_add_tensor_overloads} take tensors (ATen's own),")
print(f"  the others are TorchScript's: {add_script_overloads}")
print(f"operator overloads registered at import: {n_ops}, of which aten:: {n_aten_ops}")
print(f"  after first use of the modes (lazy imports register more): {n_ops_after_modes}")

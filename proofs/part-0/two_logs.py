"""Two logs of one line of code: the Python calls you wrote, and the operators the dispatcher ran.

Runs relu(linear(x, w)).sum() once with a TorchFunctionMode and a TorchDispatchMode both
active; each only logs the call and runs it unchanged, so every operator can be filed under
the Python call that caused it. TorchDispatchMode lives in torch.utils._python_dispatch: an
underscore module, documented for extending PyTorch. A function mode sees a call before any
ATen operator runs (for a builtin such as torch.relu, the generated binding has already parsed
the arguments); a dispatch mode sees operators after autograd and after
CompositeImplicitAutograd operators such as linear have decomposed. Also prints one
operator's schema, and which alias key each operator of the log registered its CPU kernel
from (the private torch._C._dispatch_dump_table; it fails loudly if it is gone). Each logged
operator's schema is compared with the one the dispatcher registered under its name
(the private torch._C._get_schema).
"""
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

torch.manual_seed(0)


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
# The detach appears only when something requires grad: it is autograd saving relu's output.
detach_only_with_grad = "detach" in dispatch_log.split(", ") and "detach" not in dispatch_log_no_grad.split(", ")


def cpu_kernel_from(op_name):
    """Where the CPU slot of an operator's dispatch table got its kernel: the file that registered
    it, as the private dump of the table names it ('RegisterCompositeImplicitAutograd_0.cpp')."""
    for line in torch._C._dispatch_dump_table(op_name).splitlines():  # private: torch._C._*
        if line.startswith("CPU:"):
            return line.split("registered at ")[1].split(":")[0].rsplit("/", 1)[-1]
    raise RuntimeError(f"no CPU line in the dispatch table of {op_name}")


def logged_as_registered(op):
    """The logged operator's schema is the one the dispatcher registered under its name, and
    the dispatcher holds a table of kernels under that name (private torch._C._get_schema and
    torch._C._dispatch_dump_table)."""
    schema = op._schema
    full_name = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
    registered = torch._C._get_schema(schema.name, schema.overload_name)  # private: torch._C._*
    return str(registered) == str(schema) and bool(torch._C._dispatch_dump_table(full_name))


logged_ops_in_tables = len(aten_ops) > 0 and all(logged_as_registered(op) for op in aten_ops)

linear_cpu_from = cpu_kernel_from("aten::linear")   # an alias key's kernel: it decomposes
t_cpu_from = cpu_kernel_from("aten::t")
mm_cpu_from = cpu_kernel_from("aten::mm")
linear_is_composite_implicit = "CompositeImplicitAutograd" in linear_cpu_from

print("relu(linear(x, w)).sum() with x.requires_grad=True, no bias")
print(f"  {'TorchFunctionMode (Python API)':32s}TorchDispatchMode (ATen)")
for name, ops in calls:
    print(f"  {name:30s}->  {', '.join(str(op) for op in ops)}")
print(f"{n_function_calls} Python calls, {n_aten_calls} ATen calls: linear is composite (t + mm);")
print("  detach: autograd saving relu's output for backward; the saved copy goes through the mode")
print(f"same code, nothing requires grad: {dispatch_log_no_grad}")
print(f"schema: {add_schema}")
print(f"every logged operator has the schema, and a kernel table, the dispatcher holds under its name: "
      f"{logged_ops_in_tables}")
print("where each operator's CPU kernel was registered (the file, from the dispatch table):")
print(f"  aten::linear  {linear_cpu_from}")
print(f"  aten::t       {t_cpu_from}")
print(f"  aten::mm      {mm_cpu_from}")

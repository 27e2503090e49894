"""torch's Python layer is thin: the functions and Tensor methods you call are mostly compiled C++.

Method: classify the entries of torch.Tensor, its C base class and the public torch namespace by
type; time calls with timeit, timing the CPU time of the calling thread (time.thread_time),
which on one intra-op thread holds all of the call's work while leaving out moments when another
program has the core, on one intra-op thread, warm-up first, minimum of 15 repeats taken in
turns.
"""
import ast
import inspect
import os
import textwrap
import time
import timeit
import types

import torch
import torch.nn.functional as F
from torch import nn

TORCH_DIR = os.path.dirname(torch.__file__)
torch.set_num_threads(1)


def shown(path):
    """Path relative to the folder holding the torch package: torch/nn/functional.py."""
    return os.path.relpath(path, os.path.dirname(TORCH_DIR)).replace(os.sep, "/")


def best_ns(stmts, number, repeat=15):
    """Per-call time of each statement in ns: minimum over `repeat` runs of `number` calls.

    The statements take turns within each repeat, so a slow moment hits all of them alike.
    """
    timers = [timeit.Timer(stmt, globals=globals(), timer=time.thread_time) for stmt in stmts]
    for timer in timers:
        timer.timeit(number)                               # warm-up
    best = [float("inf")] * len(timers)
    for _ in range(repeat):
        for i, timer in enumerate(timers):
            best[i] = min(best[i], timer.timeit(number))
    return [t / number * 1e9 for t in best]


def code_without_docstring(fn):
    """The source of a Python function, its docstring left out."""
    lines, _ = inspect.getsourcelines(fn)
    body = ast.parse(textwrap.dedent("".join(lines))).body[0].body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        lines = lines[:1] + lines[body[1].lineno - 1:]
    return [line.rstrip() for line in textwrap.dedent("".join(lines)).splitlines() if line.strip()]


# 1. torch.randn is not a Python function.
randn_type = type(torch.randn).__name__
try:  # torch._C._VariableFunctions is private: the C table torch/__init__.py copies from
    randn_from_c = torch.randn is torch._C._VariableFunctions.randn
    randn_from_c_text = str(randn_from_c)
except AttributeError:
    randn_from_c = False
    randn_from_c_text = "not available in this torch"
try:
    inspect.signature(torch.randn)
    signature_error = "none"
except ValueError as error:
    signature_error = type(error).__name__
print(f"type(torch.randn) is {randn_type}")
print(f"torch.randn is torch._C._VariableFunctions.randn: {randn_from_c_text}")
print(f"inspect.signature(torch.randn) raises {signature_error}: there is no Python code to read")

# 2. What torch.Tensor is made of. Its base class (TensorBase) is written in C++.
tensor_base = torch.Tensor.__mro__[1]
base_entries = vars(tensor_base).values()
tensor_c_methods = sum(isinstance(v, types.MethodDescriptorType) for v in base_entries)
tensor_c_properties = sum(isinstance(v, types.GetSetDescriptorType) for v in base_entries)
tensor_py_functions = sum(inspect.isfunction(v) and v.__code__.co_filename.endswith("_tensor.py")
                          for v in vars(torch.Tensor).values())
print(f"torch.Tensor -> {tensor_base.__module__}.{tensor_base.__name__} (C++), counting "
      f"class __dict__ entries:")
print(f"  {tensor_c_methods} C methods and {tensor_c_properties} C properties on "
      f"{tensor_base.__name__}")
print(f"  {tensor_py_functions} Python functions in torch/_tensor.py (backward, __repr__, ...)")

# 3. The public torch.* callables (names without a leading underscore).
public = [getattr(torch, name) for name in dir(torch) if not name.startswith("_")]
torch_builtins = sum(isinstance(obj, types.BuiltinFunctionType) for obj in public)
torch_py_functions = sum(isinstance(obj, types.FunctionType) for obj in public)
print(f"Public torch.* functions: {torch_builtins} builtins (C++), "
      f"{torch_py_functions} Python functions")

# 4. F.relu is a Python function that hands over to the builtin torch.relu.
print(f"F.relu lives in {shown(inspect.getsourcefile(F.relu))}, "
      f"line {F.relu.__code__.co_firstlineno}:")
for line in code_without_docstring(F.relu):
    print("    " + line)
torch.manual_seed(0)
x = torch.randn(4, 16)
relu_ns, f_relu_ns = best_ns(["torch.relu(x)", "F.relu(x)"], number=5_000)

# 5. nn.Linear: calling the module runs Module.__call__ (hooks, checks) before forward.
lin = nn.Linear(16, 16)
w, b = lin.weight, lin.bias
module_call_ns, forward_ns, f_linear_ns = best_ns(
    ["lin(x)", "lin.forward(x)", "F.linear(x, w, b)"], number=2_000)
call_overhead_ns = module_call_ns - forward_ns
five_calls_us = 5 * call_overhead_ns / 1e3  # Figure 1's model calls five modules per forward pass
# forward reads self.weight and self.bias: parameters are found by Module.__getattr__ (Python).
(param_lookup_ns,) = best_ns(["lin.weight"], number=5_000)

print("Cost per call, x of shape (4, 16) (min of 15 repeats after a warm-up):")
print(f"  torch.relu(x)        {relu_ns:7.0f} ns   builtin")
print(f"  F.relu(x)            {f_relu_ns:7.0f} ns   Python wrapper around it")
print(f"  lin(x)               {module_call_ns:7.0f} ns   Module.__call__, then forward")
print(f"  lin.forward(x)       {forward_ns:7.0f} ns   forward only")
print(f"  F.linear(x, w, b)    {f_linear_ns:7.0f} ns   the builtin that forward calls")
print(f"  lin.weight           {param_lookup_ns:7.0f} ns   via Module.__getattr__, in forward")
print(f"lin(x) - lin.forward(x): {call_overhead_ns:+.0f} ns; F.relu(x) - torch.relu(x): "
      f"{f_relu_ns - relu_ns:+.0f} ns")

"""The dtype is a switch inside the kernel: ten operators on thirteen dtypes, and bfloat16 rounded once.

The dispatcher chooses a kernel from a tensor's dispatch keys (Part 3); the private
torch._C._dispatch_keys (it fails loudly if the API is gone) shows that a tensor's keys are
the same whatever its dtype, so one CPU kernel serves them all. The script then calls ten operators on
4-element tensors of thirteen dtypes and sorts the outcomes: the kernel ran in that dtype,
the result came back in another (type promotion, or an integer sum widened to int64), a
NotImplementedError whose text is the default case of the switch in
torch/headeronly/core/Dispatch.h ('"NAME" not implemented for 'TYPE''), or another error.
Last, bfloat16: addcmul's CPU kernel (PointwiseOpsKernel.cpp) converts bfloat16 inputs to
float, the type at::opmath_type also names for bfloat16 (ATen/OpMathType.h, read from the
installed headers), and rounds once when it stores; addcmul on 1M bfloat16 values is
compared with float32 arithmetic rounded once to bfloat16, and so is c + a * b, two
separate bfloat16 operations that round twice.
"""
import os
import re

import matplotlib.pyplot as plt
import torch
from matplotlib.colors import ListedColormap

torch.manual_seed(0)

INCLUDE = os.path.join(os.path.dirname(torch.__file__), "include")
switch_header = open(os.path.join(INCLUDE, "torch", "headeronly", "core", "Dispatch.h"), encoding="utf-8").read()
switch_in_header = "switch (_st)" in switch_header and "not implemented for" in switch_header
opmath = open(os.path.join(INCLUDE, "ATen", "OpMathType.h"), encoding="utf-8").read()
opmath_bf16_is_float = re.search(r"struct OpMathType<at::BFloat16>\s*\{\s*using type = float;", opmath) is not None

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.uint16, torch.int32, torch.uint32,
          torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64]
keys = {str(d)[6:]: str(torch._C._dispatch_keys(torch.ones(2, dtype=d))) for d in DTYPES}  # private API
same_keys_every_dtype = len(set(keys.values())) == 1
OPS = {
    "a + a": lambda a: a + a,
    "a * a": lambda a: a * a,
    "torch.abs": torch.abs,
    "torch.sigmoid": torch.sigmoid,
    "torch.maximum": lambda a: torch.maximum(a, a),
    "torch.bitwise_and": lambda a: torch.bitwise_and(a, a),
    "torch.gcd": lambda a: torch.gcd(a, a),
    "a.sum()": lambda a: a.sum(),
    "torch.mm": lambda a: torch.mm(a.view(2, 2), a.view(2, 2)),
    "torch.sort": lambda a: torch.sort(a).values,
}
RAN, OTHER_DTYPE, NOT_IMPLEMENTED, ERROR = range(4)
SWITCH_MESSAGE = re.compile(r"^\"\w+\" not implemented for '\w+'$")
grid, messages = [], {}
for name, fn in OPS.items():
    row = []
    for dtype in DTYPES:
        try:
            out = fn(torch.ones(4, dtype=dtype))
            row.append(RAN if out.dtype == dtype else OTHER_DTYPE)
        except NotImplementedError as err:
            row.append(NOT_IMPLEMENTED)
            messages.setdefault(NOT_IMPLEMENTED, []).append(str(err))
        except RuntimeError as err:
            row.append(ERROR)
            messages.setdefault(ERROR, []).append(f"{name}, {str(dtype)[6:]}: {err}")
    grid.append(row)
other_dtype_cells = [f"{name} on {str(d)[6:]}" for name, row in zip(OPS, grid) for d, v in zip(DTYPES, row)
                     if v == OTHER_DTYPE]
n_other_dtype = len(other_dtype_cells)
n_not_implemented = len(messages.get(NOT_IMPLEMENTED, []))
n_other_errors = len(messages.get(ERROR, []))
all_from_switch = all(SWITCH_MESSAGE.match(m) for m in messages.get(NOT_IMPLEMENTED, []))
add_uint16_error = next(m for m in messages[NOT_IMPLEMENTED] if "UInt16" in m and "add" in m)

# bfloat16: one rounding inside addcmul, against two roundings for c + a * b.
a, b, c = (torch.randn(1 << 20).bfloat16() for _ in range(3))
once = (c.float() + a.float() * b.float()).bfloat16()
addcmul_matches_float = (torch.addcmul(c, a, b) == once).float().mean().item()
two_ops_match_float = ((c + a * b) == once).float().mean().item()
addcmul_match_pct = 100 * addcmul_matches_float
two_ops_match_pct = 100 * two_ops_match_float

print(f"dispatch keys of a CPU tensor, the same for all {len(DTYPES)} dtypes: {same_keys_every_dtype}: "
      f"{keys['float32']}")
print(f"switch with a 'not implemented for' default in torch/headeronly/core/Dispatch.h: {switch_in_header}")
print(f"{n_not_implemented} NotImplementedErrors, all in the switch's words: {all_from_switch}, e.g.")
print(f"  {add_uint16_error}")
for m in messages.get(ERROR, []):
    print(f"  other error: {m}")
print(f"{n_other_dtype} results in another dtype: {', '.join(other_dtype_cells)}")
print(f"OpMathType<BFloat16> is float in ATen/OpMathType.h: {opmath_bf16_is_float}")
print(f"bfloat16, 1M values: addcmul(c, a, b) equals float32 math rounded once: "
      f"{addcmul_matches_float:.1%}; c + a * b (two roundings): {two_ops_match_float:.1%}")

fig, ax = plt.subplots(figsize=(8, 4.0))
colors = ListedColormap(["C2", "C0", "C3", "C1"])
ax.imshow(grid, cmap=colors, vmin=-0.5, vmax=3.5, aspect="auto", alpha=0.55)
marks = {RAN: "✓", OTHER_DTYPE: "→", NOT_IMPLEMENTED: "✗", ERROR: "!"}
for i, row in enumerate(grid):
    for j, v in enumerate(row):
        ax.text(j, i, marks[v], ha="center", va="center", fontsize=10)
ax.set_xticks(range(len(DTYPES)), [str(d)[6:] for d in DTYPES], rotation=45, ha="right", fontsize=8)
ax.set_yticks(range(len(OPS)), list(OPS), fontsize=8)
ax.set_title("✓ ran in that dtype   → came back in another   ✗ not in the switch   ! refused earlier",
             fontsize=9)
fig.suptitle("One CPU kernel per operator; the dtype is a switch inside it")
fig.tight_layout()
plt.show()

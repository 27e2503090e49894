"""Type promotion: the result dtype of mixing two dtypes, and how Python numbers and 0-dim tensors count for less.

The grid is torch.promote_types over eleven dtypes, the table behind every binary operation
between tensors of the same rank of importance (c10/core/ScalarType.h declares
promoteTypes). torch.result_type then shows the three tiers that
aten/src/ATen/native/TypeProperties.h keeps in ResultTypeState: tensors with dimensions
(dimResult), 0-dim tensors (zeroResult) and Python numbers (wrappedResult). A lower tier
changes the result only when it brings a higher category (bool < integer < float <
complex). The proof checks the header for those three fields.
"""
import os

import matplotlib.pyplot as plt
import torch

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64]
SHORT = {torch.bool: "bool", torch.uint8: "u8", torch.int8: "i8", torch.int16: "i16",
         torch.int32: "i32", torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16",
         torch.float32: "f32", torch.float64: "f64", torch.complex64: "c64", torch.complex128: "c128"}
grid = [[torch.promote_types(a, b) for b in DTYPES] for a in DTYPES]
symmetric = all(grid[i][j] == grid[j][i] for i in range(len(DTYPES)) for j in range(len(DTYPES)))
u8_i8 = str(torch.promote_types(torch.uint8, torch.int8)).removeprefix("torch.")
f16_bf16 = str(torch.promote_types(torch.float16, torch.bfloat16)).removeprefix("torch.")
i64_f16 = str(torch.promote_types(torch.int64, torch.float16)).removeprefix("torch.")

t_i32 = torch.ones(3, dtype=torch.int32)
t_i8 = torch.tensor([100, 120], dtype=torch.int8)
t_f16 = torch.ones(3, dtype=torch.float16)
zero_dim_f64 = torch.tensor(1.0, dtype=torch.float64)
CASES = {
    "int32 tensor + 2.5": (t_i32, 2.5),
    "int8 tensor + 1000": (t_i8, 1000),
    "float16 tensor + 0-dim float64": (t_f16, zero_dim_f64),
    "float16 tensor + 1-dim float64": (t_f16, torch.ones(1, dtype=torch.float64)),
    "int32 tensor + 0-dim float64": (t_i32, zero_dim_f64),
    "bool tensor + True": (torch.ones(2, dtype=torch.bool), True),
    "bool tensor + 1": (torch.ones(2, dtype=torch.bool), 1),
}
results = {name: SHORT[torch.result_type(a, b)] for name, (a, b) in CASES.items()}
int_div = str((torch.tensor([3]) / torch.tensor([2])).dtype).removeprefix("torch.")
print(f"promote_types over {len(DTYPES)} dtypes (grid in the figure), symmetric: {symmetric}")
print(f"uint8 with int8 -> {u8_i8}; float16 with bfloat16 -> {f16_bf16}; int64 with float16 -> {i64_f16}")
print(f"{'expression':<32}result dtype")
for name, res in results.items():
    print(f"{name:<32}{res}")
print(f"{'int64 tensor / int64 tensor':<32}{int_div}  (true division)")
python_float_gives_default = results["int32 tensor + 2.5"] == SHORT[torch.get_default_dtype()]
python_int_keeps_int8 = results["int8 tensor + 1000"] == "i8"
zero_dim_same_category_ignored = results["float16 tensor + 0-dim float64"] == "f16"
one_dim_wins = results["float16 tensor + 1-dim float64"] == "f64"
zero_dim_brings_its_dtype = results["int32 tensor + 0-dim float64"] == "f64"  # its own dtype, not the default
wrapped_add = (t_i8 + 1000).tolist()
wrapped_add_text = ", ".join(str(v) for v in wrapped_add)  # the wrapped values, for the page
# Wrapping around: the true sums 1100 and 1120, taken modulo 256 into int8's range -128..127.
python_int_wraps = wrapped_add == [(v + 1000 + 128) % 256 - 128 for v in t_i8.tolist()] != [1100, 1120]
print(f"int8 [100, 120] + 1000 = {wrapped_add} (computed in int8: 1100 and 1120 wrap around "
      f"modulo 256: {python_int_wraps})")

# int64 with float16 gives float16: an integer too big for float16 becomes infinity.
big_int_plus_half = (torch.tensor([70_000]) + torch.zeros(1, dtype=torch.float16)).item()
int_to_half_overflows = big_int_plus_half == float("inf")
print(f"torch.tensor([70_000]) + torch.zeros(1, dtype=torch.float16) = {big_int_plus_half} "
      f"(float16's largest value is {torch.finfo(torch.float16).max:,.0f})")

header = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "native", "TypeProperties.h")
with open(header, encoding="utf-8") as f:
    text = f.read()
three_tiers_in_header = all(f"c10::ScalarType {tier} = ScalarType::Undefined;" in text
                            for tier in ("dimResult", "wrappedResult", "zeroResult"))
print(f"ResultTypeState has dimResult, zeroResult, wrappedResult: {three_tiers_in_header}")

# Figure: the promotion grid; colour = category of the result, darker = more bytes.
def category(dt):
    if dt == torch.bool:
        return 0
    return 3 if dt.is_complex else 2 if dt.is_floating_point else 1


CATEGORY = ["bool", "integer", "floating", "complex"]
fig, ax = plt.subplots(figsize=(8, 5))
for i, row in enumerate(grid):
    for j, res in enumerate(row):
        nbytes = torch.empty(0, dtype=res).element_size()
        ax.add_patch(plt.Rectangle((j, i), 0.95, 0.95, color=f"C{category(res)}",
                                   alpha=min(1.0, 0.2 + 0.15 * nbytes.bit_length())))
        ax.text(j + 0.47, i + 0.5, SHORT[res], ha="center", va="center", fontsize=7)
# The three cells the page talks about, outlined: a type neither side had, or a float16 that
# an int64 cannot fit into.
for a, b in ((torch.uint8, torch.int8), (torch.float16, torch.bfloat16), (torch.int64, torch.float16)):
    i, j = DTYPES.index(a), DTYPES.index(b)
    ax.add_patch(plt.Rectangle((j - 0.02, i - 0.02), 0.99, 0.99, fill=False, edgecolor="black", linewidth=2))
for k, name in enumerate(CATEGORY):
    ax.add_patch(plt.Rectangle((len(DTYPES) + 0.6, 1 + k * 1.2), 0.8, 0.8, color=f"C{k}", alpha=0.6))
    ax.text(len(DTYPES) + 1.6, 1.4 + k * 1.2, name, va="center", fontsize=8)
ax.set_xlim(0, len(DTYPES) + 4)
ax.set_ylim(len(DTYPES), 0)
ax.xaxis.set_label_position("bottom")
ax.set_xticks([k + 0.47 for k in range(len(DTYPES))], [SHORT[d] for d in DTYPES], fontsize=8)
ax.set_yticks([k + 0.5 for k in range(len(DTYPES))], [SHORT[d] for d in DTYPES], fontsize=8)
ax.xaxis.tick_top()
ax.set_aspect("equal")
ax.set_xlabel("dtype of the other tensor (darker: more bytes per element; outlined: cells the page discusses)")
ax.set_ylabel("dtype of one tensor")
ax.set_title("torch.promote_types(row, column): the dtype the result gets", fontsize=10)
for spine in ax.spines.values():
    spine.set_visible(False)
fig.tight_layout()
plt.show()

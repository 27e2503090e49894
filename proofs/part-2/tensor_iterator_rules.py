"""TensorIterator's rules: overlaps, broadcasting, promotion, the output's layout, mixed dtypes.

Each rule is shown on a small call. Checks first: an output that overlaps an input in
part is refused (compute_mem_overlaps). Broadcasting: the output shape of (3, 1, 5) +
(4, 1). Type promotion, two cases beyond Part 1's rules: torch.result_type of a floating
tensor with a complex Python number or zero-dim tensor, and torch.promote_types of uint16,
uint32 and uint64 with thirteen other dtypes each, and one real add of uint16 and float32
tensors.
Output layout: the strides of a freshly allocated output when the inputs are channels-last
or transposed, and when they disagree, in both orders, and with a broadcast input in
either place. Mixed dtypes: for int32 + float32 on the CPU, TensorIterator converts the
int32 input into a float32 temporary before the loop runs, and for an out= of another
dtype it computes into a temporary and copies it into out at the end (TensorIterator.cpp,
compute_types and cast_outputs); the legacy autograd profiler (torch.autograd.profiler_legacy,
which prints nothing of its own) records the operators called inside aten::add and the
bytes each allocated. Last, the price: add into a preallocated output, float32 + float32
against float32 + int32, 1M elements, one thread, minimum of 9 batches, interleaved.
Times are the calling thread's CPU time (time.thread_time_ns): with one thread the
kernel runs on the calling thread, and another program busy on the machine cannot
inflate that clock as it inflates wall time.
"""
import time

import torch
from torch.autograd import profiler_legacy

torch.set_num_threads(1)
torch.manual_seed(0)

# Checks: an output that shares some, not all, of its memory with an input is refused.
x = torch.arange(10.0)
try:
    torch.add(x[:-1], 1, out=x[1:])
    overlap_error = ""
except RuntimeError as err:
    overlap_error = str(err).split(". ")[0]
overlap_refused = overlap_error.startswith("unsupported operation")

# Broadcasting: sizes are matched from the right, a 1 stretches.
broadcast_shape = str(tuple((torch.ones(3, 1, 5) + torch.ones(4, 1)).shape))

# Type promotion (Part 1 gives the rules): two cases it does not show. A complex number, or a
# zero-dim complex tensor, keeps a floating tensor's width; uint16, uint32 and uint64 promote
# with the floating types only, and every other partner is refused.
PAIRS = {
    "float16 + 1j": (torch.ones(2, dtype=torch.float16), 1j),
    "float16 + complex128 0-dim": (torch.ones(2, dtype=torch.float16), torch.tensor(1j, dtype=torch.complex128)),
    "float32 + complex128 0-dim": (torch.ones(2), torch.tensor(1j, dtype=torch.complex128)),
    "float64 + 1j": (torch.ones(2, dtype=torch.float64), 1j),
}
promoted = {k: str(torch.result_type(a, b)).replace("torch.", "") for k, (a, b) in PAIRS.items()}
f16_complex = promoted["float16 + 1j"]
f16_complex_tensor = promoted["float16 + complex128 0-dim"]
complex_keeps_width = (f16_complex == f16_complex_tensor == "complex32"
                       and promoted["float32 + complex128 0-dim"] == "complex64")
PARTNERS = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16,
            torch.uint32, torch.uint64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64]
UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)
promoted_unsigned = {}  # (unsigned, partner) -> result dtype name, or "refused"
for wide in UNSIGNED:
    for partner in PARTNERS:
        if partner == wide:
            continue
        try:
            promoted_unsigned[str(wide)[6:], str(partner)[6:]] = str(torch.promote_types(wide, partner))[6:]
        except RuntimeError as err:
            promoted_unsigned[str(wide)[6:], str(partner)[6:]] = "refused"
            unsigned_error = str(err).split(", attempted")[0]
unsigned_with = {p: r for (u, p), r in promoted_unsigned.items() if u == "uint16"}
FLOATING = ("float16", "bfloat16", "float32", "float64")
uint16_float32 = unsigned_with["float32"]
unsigned_floats_only = all(r == (p if p in FLOATING else "refused") for (u, p), r in promoted_unsigned.items())
n_refused_partners = sum(v == "refused" for v in unsigned_with.values())
uint16_add_float32 = str((torch.ones(2, dtype=torch.uint16) + torch.ones(2)).dtype)[6:]  # a real call
unsigned_floats_only = unsigned_floats_only and uint16_add_float32 == "float32"

# Output layout follows the inputs: among inputs of the output's full shape, the first one
# decides; an input that is broadcast has no say, wherever it sits.
x = torch.rand(2, 3, 4, 5).to(memory_format=torch.channels_last)
out_channels_last = (x + x).is_contiguous(memory_format=torch.channels_last)
m = torch.rand(300, 400)
transposed_out_stride = str((m.t() + m.t()).stride())
mixed_layout_stride = str((m.t() + m.t().contiguous()).stride())
mixed_layout_stride_reversed = str((m.t().contiguous() + m.t()).stride())
column = torch.rand(400, 1)  # broadcast along the 300 columns
broadcast_first_stride = str((column + m.t()).stride())
broadcast_second_stride = str((m.t() + column).stride())


def children_of_add(a, b, out):
    """Operators called inside aten::add(a, b, out=out), and the bytes they allocated."""
    with profiler_legacy.profile(profile_memory=True) as prof:
        torch.add(a, b, out=out)
    inside = [e for e in prof.function_events if e.cpu_parent is not None]
    return [e.name for e in inside], sum(max(e.self_cpu_memory_usage, 0) for e in inside)


N = 1 << 20
a32, b32, o32 = torch.rand(N), torch.rand(N), torch.empty(N)
bi32 = torch.randint(0, 9, (N,), dtype=torch.int32)
same_children, same_bytes = children_of_add(a32, b32, o32)
mixed_children, mixed_bytes = children_of_add(a32, bi32, o32)
mixed_inner_ops = ", ".join(mixed_children)
same_calls_nothing = not same_children  # float32 + float32: no operator called inside add
first_input_wins = (mixed_layout_stride == str(m.t().stride())  # laid out like input 1
                    and mixed_layout_stride_reversed == str(m.t().contiguous().stride()))
broadcast_gives_way = broadcast_first_stride == broadcast_second_stride == str(m.t().stride())
o64 = torch.empty(N, dtype=torch.float64)
out_children, out_bytes = children_of_add(a32, b32, o64)
out_inner_ops = ", ".join(out_children)
out_temp_mib = out_bytes / 2**20
out_gets_temporary = "aten::copy_" in out_children and out_bytes == 4 * N
mixed_temp_mib = mixed_bytes / 2**20


def batch_us(fn, calls=10):
    t0 = time.thread_time_ns()
    for _ in range(calls):
        fn()
    return (time.thread_time_ns() - t0) / calls / 1e3


same = lambda: torch.add(a32, b32, out=o32)  # noqa: E731
mixed = lambda: torch.add(a32, bi32, out=o32)  # noqa: E731
same(), mixed()
best = {"same": float("inf"), "mixed": float("inf")}
for _ in range(9):
    best["same"] = min(best["same"], batch_us(same))
    best["mixed"] = min(best["mixed"], batch_us(mixed))
same_us, mixed_us = best["same"], best["mixed"]
mixed_vs_same = mixed_us / same_us

print(f"add(x[:-1], 1, out=x[1:]): {overlap_error}")
print(f"(3, 1, 5) + (4, 1) -> {broadcast_shape}")
for pair, dtype in promoted.items():
    print(f"  {pair:<28} -> {dtype}")
print("uint16 with " + ", ".join(f"{p} -> {r}" for p, r in unsigned_with.items()))
print(f"  uint32 and uint64 the same way (floating partners win, every other is refused): {unsigned_floats_only}")
print(f"  (refused: {unsigned_error}); a uint16 tensor + a float32 tensor -> {uint16_add_float32}")
print(f"channels-last + channels-last -> channels-last output: {out_channels_last}")
print(f"m.t() + m.t() -> output strides {transposed_out_stride} (m is 300x400; m.t() has strides "
      f"{m.t().stride()}, a fresh 400x300 tensor {torch.empty(400, 300).stride()})")
print(f"m.t() + m.t().contiguous() -> output strides {mixed_layout_stride}; "
      f"m.t().contiguous() + m.t() -> {mixed_layout_stride_reversed} (the first input's)")
print(f"with a (400, 1) input broadcast: first {broadcast_first_stride}, second {broadcast_second_stride}")
print(f"inside add(float32, float32, out=): {same_children or 'no other operator'}")
print(f"inside add(float32, int32, out=):   {mixed_inner_ops}, {mixed_temp_mib:.0f} MiB allocated")
print(f"inside add(float32, float32, out=float64): {out_inner_ops}, {out_temp_mib:.0f} MiB allocated")
print(f"add into out=, {N:,} elements, min of 9: float32+float32 {same_us:.0f} µs, "
      f"float32+int32 {mixed_us:.0f} µs ({mixed_vs_same:.1f}x)")

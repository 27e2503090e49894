"""A dtype fixes the bytes per element; a conversion allocates new storage, a dtype view only relabels the bytes.

For common dtypes the proof prints element_size() (and that of every float8 format torch has), the bytes a billion elements take, and
for floating types the largest value and the step after 1.0 (torch.finfo), the smallest normal
value of float16 and bfloat16, then the binary
exponents of the largest and the smallest normal value and the bits of fraction, which say
what range and how many digits a format has. It then converts
a 1 MiB float32 tensor to other dtypes and measures the new storage each time, and
reinterprets the same bytes with view(dtype) and view_as_real, which allocate nothing; a
view to a dtype of another size is tried on a transposed tensor, whose last stride is not 1,
and, as float64, on a float32 tensor of five elements and on one whose storage offset is odd.
"""
import math

import torch

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn,
          torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64]
print(f"{'dtype':<22}{'bytes':>6}{'GiB per 1e9':>13}{'max':>12}{'eps':>11}")
size_of = {}
for dt in DTYPES:
    size_of[dt] = torch.empty(0, dtype=dt).element_size()
    if dt.is_floating_point:
        info = torch.finfo(dt)
        extra = f"{info.max:>12.3g}{info.eps:>11.2g}"
    else:
        extra = ""
    print(f"{str(dt):<22}{size_of[dt]:>6}{1e9 * size_of[dt] / 2**30:>13.2f}{extra}")
float32_bytes = size_of[torch.float32]
bfloat16_bytes = size_of[torch.bfloat16]
bool_bytes = size_of[torch.bool]
# Every float8 format this torch has (e4m3fn, e5m2 and their variants) takes one byte.
FLOAT8 = [getattr(torch, name) for name in dir(torch)
          if name.startswith("float8_") and isinstance(getattr(torch, name), torch.dtype)]
float8_sizes = {str(dt).removeprefix("torch."): torch.empty(0, dtype=dt).element_size() for dt in FLOAT8}
float8_bytes = max(float8_sizes.values())
all_float8_one_byte = len(FLOAT8) >= 2 and set(float8_sizes.values()) == {1}
print(f"float8 formats: {', '.join(f'{k} {v}' for k, v in float8_sizes.items())} byte(s)")
float16_max = torch.finfo(torch.float16).max
bfloat16_max = torch.finfo(torch.bfloat16).max
float16_tiny = torch.finfo(torch.float16).tiny
bfloat16_tiny = torch.finfo(torch.bfloat16).tiny
print(f"smallest normal value: float16 {float16_tiny:.3g}, bfloat16 {bfloat16_tiny:.3g}")


def shape_of(dt):
    """(exponent of the largest value, exponent of the smallest normal value, fraction bits)."""
    info = torch.finfo(dt)
    return math.frexp(info.max)[1], math.frexp(info.tiny)[1], round(-math.log2(info.eps))


shapes = {dt: shape_of(dt) for dt in (torch.float32, torch.bfloat16, torch.float16)}
print(f"{'format':<16}{'exponent of max':>16}{'of tiny':>9}{'fraction bits':>15}  (max, tiny = m * 2**exponent, 0.5 <= m < 1)")
for dt, (top, bottom, fraction) in shapes.items():
    print(f"{str(dt):<16}{top:>16}{bottom:>9}{fraction:>15}")
bfloat16_range_like_float32 = shapes[torch.bfloat16][:2] == shapes[torch.float32][:2]
bfloat16_fraction_bits, float32_fraction_bits = shapes[torch.bfloat16][2], shapes[torch.float32][2]
bfloat16_fewer_digits = bfloat16_fraction_bits < shapes[torch.float16][2] < float32_fraction_bits

x = torch.rand(2**18)  # 1 MiB of float32
conversions = {
    "x.to(torch.float64)": x.to(torch.float64),
    "x.to(torch.bfloat16)": x.to(torch.bfloat16),
    "x.to(torch.float32)": x.to(torch.float32),
    "x.view(torch.uint8)": x.view(torch.uint8),
    "x.view(torch.int32)": x.view(torch.int32),
}
print(f"{'x = torch.rand(2**18), then':<28}{'numel':>9}{'storage bytes':>15}  same storage")
for name, t in conversions.items():
    same = t.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    print(f"{name:<28}{t.numel():>9,}{t.untyped_storage().nbytes():>15,}  {same}")
to_float64_bytes = conversions["x.to(torch.float64)"].untyped_storage().nbytes()
x_bytes = x.untyped_storage().nbytes()
uint8_view_numel = conversions["x.view(torch.uint8)"].numel()
view_dtype_shares = conversions["x.view(torch.uint8)"].data_ptr() == x.data_ptr()
same_dtype_returns_self = conversions["x.to(torch.float32)"] is x
z = torch.zeros(3, dtype=torch.complex64)
zr = torch.view_as_real(z)
view_as_real_shares = zr.data_ptr() == z.data_ptr()
print(f"view_as_real(complex64 of 3): shape {tuple(zr.shape)}, dtype {zr.dtype}, "
      f"same storage: {view_as_real_shares}")
transposed = torch.rand(4, 4).t()
try:
    transposed.view(torch.uint8)
    resize_view_error = ""
except RuntimeError as err:
    resize_view_error = str(err)
same_size_view_works = transposed.view(torch.int32).data_ptr() == transposed.data_ptr()
view_dtype_needs_unit_stride = "stride(-1) must be 1" in resize_view_error and same_size_view_works
print(f"torch.rand(4, 4).t().view(torch.uint8) raises: {resize_view_error}")
print(f"torch.rand(4, 4).t().view(torch.int32), a dtype of the same size, works: {same_size_view_works}")

# Viewing as a wider dtype also needs the last size and the storage offset to divide by the ratio.
def refused(make, what):
    try:
        make()
    except RuntimeError as err:
        print(f"float32 -> float64 view with an odd {what} raises: {str(err).splitlines()[0][:100]}")
        return True
    print(f"float32 -> float64 view with an odd {what}: worked")
    return False


odd_size_refused = refused(lambda: torch.zeros(5).view(torch.float64), "last size")
odd_offset_refused = refused(lambda: torch.zeros(4)[1:3].view(torch.float64), "storage offset")
view_dtype_needs_divisible = odd_size_refused and odd_offset_refused

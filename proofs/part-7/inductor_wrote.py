"""The C++ that Inductor wrote for Figure 1's forward, loss and backward, and how many calls replaced how many operators.

torch.compile's default backend, Inductor (torch/_inductor/), turns the two FX graphs that
AOTAutograd hands it (forward and backward) into Python wrapper modules that call two kinds of
code: C++ loops it writes itself (cpp_fused_* kernels, where several operators become one
loop) and library kernels it calls as they are (extern_kernels.mm / addmm: the same BLAS
matrix products eager runs). On a CPU it compiles the C++ with the machine's compiler, so the
script first looks for one the way Inductor does (torch._inductor.cpp_builder.get_cpp_compiler:
$CXX, else g++) and raises, naming what is missing, if there is none.

Inductor's on-disk cache would make a second compile on the same machine much cheaper, so the
script points TORCHINDUCTOR_CACHE_DIR at a fresh, empty folder before torch._inductor is
imported (the variable is read when Inductor first looks for its cache), and sets
TORCHINDUCTOR_COMPILE_THREADS=1 so the kernels are compiled one after another in this process
(read when torch._inductor.config is imported); it checks both took effect. It times the
compiler probe that Inductor runs once per cache folder to learn which vector instructions the
compiler and CPU support (torch._inductor.cpu_vec_isa.valid_vec_isa_list, private), then the
compile itself. The generated source is caught with the private
torch._inductor.utils.run_and_get_code. The eager side is counted with a TorchDispatchMode
(torch.utils._python_dispatch, an underscore module documented for extending PyTorch) on the
same forward, loss and backward. Private APIs throughout: the script fails if one is gone.
"""
import os
import sys
import tempfile

CACHE = tempfile.mkdtemp(prefix="inductor-cache-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = CACHE        # before torch._inductor is imported
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

import re
import shutil
import time

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

if "torch._inductor.config" in sys.modules and os.environ.get("TORCHINDUCTOR_CACHE_DIR") != CACHE:
    raise RuntimeError("torch._inductor was imported before the cache folder could be set")
import torch._inductor.config as inductor_config  # noqa: E402  private
import torch._inductor.cpp_builder as cpp_builder  # noqa: E402  private
import torch._inductor.cpu_vec_isa as cpu_vec_isa  # noqa: E402  private
from torch._inductor import exc as inductor_exc  # noqa: E402  private
from torch._inductor.runtime.cache_dir_utils import cache_dir  # noqa: E402  private
from torch._inductor.utils import run_and_get_code  # noqa: E402  private

try:
    compiler = cpp_builder.get_cpp_compiler()
except inductor_exc.InvalidCxxCompiler:
    raise RuntimeError("no C++ compiler found: on a CPU, torch.compile's Inductor backend compiles "
                       "the C++ it writes, and it looked for $CXX or g++. Install one (for example "
                       "`apt install g++`) or set CXX.") from None
compiler_path = shutil.which(compiler) or compiler
if cache_dir() != CACHE or inductor_config.compile_threads != 1:
    raise RuntimeError(f"the cache folder or compile threads did not take: {cache_dir()}, "
                       f"{inductor_config.compile_threads}")
cache_started_empty = not any(os.scandir(CACHE))

torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()


class Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func)
        return func(*args, **(kwargs or {}))


with Ops() as eager:
    loss_fn(model(x), y).backward()
eager_ops = len(eager.ops)
eager_computing = sum(not op.is_view for op in eager.ops)
for p in model.parameters():
    p.grad = None

t0 = time.perf_counter()
isas = cpu_vec_isa.valid_vec_isa_list()
picked = cpu_vec_isa.pick_vec_isa()
probe_s = time.perf_counter() - t0
vector_isa = str(picked) if picked else "none (scalar loops)"


def forward_and_loss(x, y):
    return loss_fn(model(x), y)


compiled = torch.compile(forward_and_loss)


def one_step():
    loss = compiled(x, y)
    loss.backward()
    return loss


t0 = time.perf_counter()
loss, sources = run_and_get_code(one_step)
compile_s = time.perf_counter() - t0
if len(sources) != 2:
    raise RuntimeError(f"expected a forward and a backward wrapper, caught {len(sources)}")
forward_code, backward_code = sources
grads_match = True
compiled_grads = [p.grad.clone() for p in model.parameters()]
for p in model.parameters():
    p.grad = None
loss_fn(model(x), y).backward()
grads_match = all(torch.allclose(a, p.grad, rtol=1e-5, atol=1e-6) for a, p in zip(compiled_grads, model.parameters()))


def relu_kernel_source(code):
    found = re.search(r"cpp_fused_relu_0 = .*?r'''\n(.*?)'''", code, re.DOTALL)
    if found is None:
        raise RuntimeError("no cpp_fused_relu_0 kernel in the forward wrapper")
    return found.group(1)


def kernels(code):
    """Names of the C++ kernels a wrapper defines, and the library calls its call() makes."""
    cpp = re.findall(r"^(cpp_fused_\w+) = async_compile\.cpp_pybinding", code, re.MULTILINE)
    extern = re.findall(r"^\s+extern_kernels\.(\w+)\(", code, re.MULTILINE)
    return cpp, extern


fw_cpp, fw_extern = kernels(forward_code)
bw_cpp, bw_extern = kernels(backward_code)
n_cpp_kernels = len(fw_cpp) + len(bw_cpp)
n_extern_calls = len(fw_extern) + len(bw_extern)
n_compiled_calls = n_cpp_kernels + n_extern_calls
cpp_kernel_names = ", ".join(fw_cpp + bw_cpp)
extern_names = sorted(set(fw_extern + bw_extern))
buffers_reused = len(re.findall(r"# reuse$", forward_code + backward_code, re.MULTILINE))
threads = torch.get_num_threads()
uses_openmp = "#pragma omp parallel" in relu_kernel_source(forward_code)
kernels_vectorized = "at::vec::Vectorized" in relu_kernel_source(forward_code)
openmp_follows_threads = uses_openmp == (threads > 1)
vectorized_follows_isa = kernels_vectorized == bool(picked)
forward_returns = re.search(r"^\s+return \((.*)\)\s*$", forward_code, re.MULTILINE).group(1)
n_forward_outputs = len([p for p in forward_returns.split(",") if p.strip()])
saved_for_backward = n_forward_outputs - 1
relu_kernel = relu_kernel_source(forward_code)
relu_loop_line = next(line.strip() for line in relu_kernel.splitlines() if "tmp1 =" in line)
forward_call = forward_code[forward_code.index("    def call(self, args):"):forward_code.index("runner = Runner")]
so_files = sum(name.endswith(".so") for _, _, names in os.walk(CACHE) for name in names)

print(f"C++ compiler: {compiler} ({compiler_path}); cache folder fresh and empty: {cache_started_empty}")
print(f"vector instructions Inductor will use: {vector_isa}; probing took {probe_s:.1f} s")
print(f"compiling forward, loss and backward, then running them once: {compile_s:.1f} s")
print(f"the compiled gradients match eager's: {grads_match}")
print(f"\neager: {eager_ops} operators for forward, loss and backward ({eager_computing} not views)")
print(f"compiled: {n_compiled_calls} calls: {n_cpp_kernels} C++ kernels Inductor wrote "
      f"({cpp_kernel_names}) and {n_extern_calls} library calls ({', '.join(extern_names)})")
print(f"torch threads: {threads}; the ReLU kernel uses OpenMP: {uses_openmp}, at::vec::Vectorized: "
      f"{kernels_vectorized}")
print(f"buffers reused in place: {buffers_reused}; the forward returns the loss and "
      f"{saved_for_backward} tensors for backward: {forward_returns}")
print(f"shared libraries in the cache folder after compiling: {so_files}")
print("\n--- the forward wrapper's call(), as Inductor wrote it ---")
print(forward_call.rstrip())
print("\n--- cpp_fused_relu_0, the C++ kernel for ReLU ---")
print(relu_kernel.rstrip())

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
groups = [("eager: operators\n(forward, loss, backward)", [("views", eager_ops - eager_computing, "C7"),
                                                           ("computing", eager_computing, "C0")]),
          ("compiled: calls", [("library\n(BLAS)", n_extern_calls, "C2"),
                               ("Inductor's\nC++", n_cpp_kernels, "C1")])]
for row, (label, parts) in enumerate(groups):
    left = 0
    for name, n, color in parts:
        ax.barh(row, n, left=left, color=color, alpha=0.8)
        ax.text(left + n / 2, row, f"{n}\n{name}", ha="center", va="center", fontsize=7.5)
        left += n
ax.set_yticks(range(2), [g[0] for g in groups], fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("count")
names = "\n".join(fw_cpp + bw_cpp)
ax.text(0.99, 0.02, names, transform=ax.transAxes, ha="right", va="bottom", fontsize=7, family="monospace")
ax.set_title("Figure 1's forward, loss and backward: eager operators against compiled calls")
plt.show()

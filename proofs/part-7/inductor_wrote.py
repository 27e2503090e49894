"""The C++ that Inductor wrote for Figure 1's forward, loss and backward, and the calls that replaced eager's operators.

torch.compile's default backend, Inductor (torch/_inductor/), turns the two FX graphs that
AOTAutograd hands it (forward and backward) into Python wrapper modules that call two kinds of
code: C++ loops it writes itself (cpp_fused_* kernels, where several operators become one
loop) and library kernels it calls as they are (extern_kernels.mm / addmm: the same BLAS
matrix products eager runs). On a CPU it compiles the C++ with the machine's compiler, so the
script first looks for one the way Inductor does (torch._inductor.cpp_builder.get_cpp_compiler:
$CXX, else g++) and raises, naming what is missing, if there is none.

Inductor's on-disk caches would make a second compile on the same machine much cheaper, so the
script points TORCHINDUCTOR_CACHE_DIR at a fresh, empty folder before torch._inductor is
imported (the variable is read when Inductor first looks for its cache), and sets
TORCHINDUCTOR_COMPILE_THREADS=1 so the kernels are compiled one after another in this process
(read when torch._inductor.config is imported); it checks both took effect, and after the
compile it reads the caches' own counters (the private torch._dynamo.utils.counters): every
graph missed, none hit. torch runs two threads here (torch.set_num_threads(2)), whatever the
machine has, so that a kernel has a reason to be parallel.

The generated source is caught with the private torch._inductor.utils.run_and_get_code. The
eager side is counted with a TorchDispatchMode (torch.utils._python_dispatch, an underscore
module documented for extending PyTorch) on the same forward, loss and backward, with the shape
of every new tensor. Then the first layer and its ReLU are compiled twice more, under no_grad,
with the FX graph cache off: once on one thread, once with ATEN_CPU_CAPABILITY=default (and no
precompiled header, which Inductor would otherwise build again for that choice), to see what
the ReLU kernel becomes without threads and without vector instructions. Private APIs
throughout: the script fails if one is gone.
"""
import os
import sys
import tempfile

CACHE = tempfile.mkdtemp(prefix="inductor-cache-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = CACHE        # before torch._inductor is imported
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

import re
import shutil

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode  # underscore module, see docstring

if "torch._inductor.config" in sys.modules and os.environ.get("TORCHINDUCTOR_CACHE_DIR") != CACHE:
    raise RuntimeError("torch._inductor was imported before the cache folder could be set")
import torch._functorch.config as functorch_config  # noqa: E402  private
import torch._inductor.config as inductor_config  # noqa: E402  private
import torch._inductor.cpp_builder as cpp_builder  # noqa: E402  private
import torch._inductor.cpu_vec_isa as cpu_vec_isa  # noqa: E402  private
from torch._dynamo.utils import counters  # noqa: E402  private
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

THREADS = 2
threads = THREADS
torch.set_num_threads(THREADS)
torch.manual_seed(0)
x = torch.randn(1024, 8)
y = x[:, :1] * x[:, 1:2] + x[:, 2:3].sin()
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 1))
loss_fn = nn.MSELoss()
HIDDEN = (x.shape[0], model[0].out_features)   # a hidden-size tensor: 1024 x 64


class Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []
        self.new_hidden = 0   # new tensors of the hidden layer's size, from operators that are not views

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops.append(func)
        if not func.is_view and isinstance(out, torch.Tensor) and tuple(out.shape) == HIDDEN:
            self.new_hidden += 1
        return out


with Ops() as eager:
    loss_fn(model(x), y).backward()
eager_ops = len(eager.ops)
eager_computing = sum(not op.is_view for op in eager.ops)
eager_hidden_buffers = eager.new_hidden
for p in model.parameters():
    p.grad = None

picked = cpu_vec_isa.pick_vec_isa()   # the probe of the vector instructions (x86: compiles test files)
has_vector_isa = bool(picked)
vector_isa = str(picked) if picked else "none (scalar loops)"


def forward_and_loss(x, y):
    return loss_fn(model(x), y)


compiled = torch.compile(forward_and_loss)


def one_step():
    loss = compiled(x, y)
    loss.backward()
    return loss


counters.clear()
loss, sources = run_and_get_code(one_step)
if len(sources) != 2:
    raise RuntimeError(f"expected a forward and a backward wrapper, caught {len(sources)}")
forward_code, backward_code = sources
fx_misses, fx_hits = counters["inductor"]["fxgraph_cache_miss"], counters["inductor"]["fxgraph_cache_hit"]
aot_misses, aot_hits = (counters["aot_autograd"]["autograd_cache_miss"],
                        counters["aot_autograd"]["autograd_cache_hit"])
compiled_from_scratch = fx_misses >= 2 and fx_hits == 0 and aot_hits == 0
compiled_grads = [p.grad.clone() for p in model.parameters()]
for p in model.parameters():
    p.grad = None
loss_fn(model(x), y).backward()
grads_match = all(torch.allclose(a, p.grad, rtol=1e-5, atol=1e-6) for a, p in zip(compiled_grads, model.parameters()))


def relu_kernel_source(code):
    found = re.search(r"(cpp_fused_\w*relu\w*) = .*?r'''\n(.*?)'''", code, re.DOTALL)
    if found is None:
        raise RuntimeError("no cpp_fused_*relu* kernel in the wrapper")
    return found.group(2)


def kernels(code):
    """Names of the C++ kernels a wrapper defines, and the library calls its call() makes."""
    cpp = re.findall(r"^(cpp_fused_\w+) = async_compile\.cpp_pybinding", code, re.MULTILINE)
    extern = re.findall(r"^\s+extern_kernels\.(\w+)\(", code, re.MULTILINE)
    return cpp, extern


fw_cpp, fw_extern = kernels(forward_code)
bw_cpp, bw_extern = kernels(backward_code)
n_cpp_kernels = len(fw_cpp) + len(bw_cpp)
n_extern_calls = len(fw_extern) + len(bw_extern)
n_kernel_calls = n_cpp_kernels + n_extern_calls
cpp_kernel_names = ", ".join(fw_cpp + bw_cpp)
extern_names = sorted(set(fw_extern + bw_extern))
wrappers = forward_code + backward_code
buffers_allocated = len(re.findall(r"= empty_strided_cpu\(", wrappers))
hidden_pattern = rf"= empty_strided_cpu\(\({HIDDEN[0]}, {HIDDEN[1]}\)"
compiled_hidden_buffers = len(re.findall(hidden_pattern, wrappers))
fewer_hidden_buffers = compiled_hidden_buffers < eager_hidden_buffers
buffers_reused = len(re.findall(r"# reuse$", wrappers, re.MULTILINE))
relu_writes_in_place = bool(re.search(r"cpp_fused_relu_0\(buf(\d+)\)", forward_code))
backward_reuses = re.findall(r"^\s+(\w+) = (\w+); del \2  # reuse$", backward_code, re.MULTILINE)
relu_backward_in_place = any(source == "relu" for _, source in backward_reuses)  # over the saved ReLU output
relu_kernel = relu_kernel_source(forward_code)
uses_openmp = "#pragma omp parallel" in relu_kernel
kernels_vectorized = "at::vec::Vectorized" in relu_kernel
forward_returns = re.search(r"^\s+return \((.*)\)\s*$", forward_code, re.MULTILINE).group(1)
n_forward_outputs = len([p for p in forward_returns.split(",") if p.strip()])
saved_for_backward = n_forward_outputs - 1
relu_loop_line = next(line.strip() for line in relu_kernel.splitlines() if "tmp1 =" in line)
forward_call = forward_code[forward_code.index("    def call(self, args):"):forward_code.index("runner = Runner")]
so_files = sum(name.endswith(".so") for _, _, names in os.walk(CACHE) for name in names)


def first_layer(a):
    return model[1](model[0](a))


def relu_kernel_when(threads, capability=None):
    """The ReLU kernel Inductor writes for the first layer, compiled afresh with these settings."""
    torch.set_num_threads(threads)
    before = os.environ.get("ATEN_CPU_CAPABILITY")
    if capability:
        os.environ["ATEN_CPU_CAPABILITY"] = capability   # read by Inductor when it picks the vector ISA
    try:
        with torch.no_grad(), inductor_config.patch(fx_graph_cache=False,
                                                    cpp_cache_precompile_headers=capability is None), \
                functorch_config.patch(enable_autograd_cache=False):
            _, codes = run_and_get_code(torch.compile(first_layer), x)
    finally:
        torch.set_num_threads(THREADS)
        if before is None:
            os.environ.pop("ATEN_CPU_CAPABILITY", None)
        else:
            os.environ["ATEN_CPU_CAPABILITY"] = before
    return relu_kernel_source(codes[0])


one_thread_kernel = relu_kernel_when(1)
openmp_on_one_thread = "#pragma omp parallel" in one_thread_kernel
openmp_follows_threads = uses_openmp and not openmp_on_one_thread
default_kernel = relu_kernel_when(THREADS, "default")
vectorized_with_default = "at::vec::Vectorized" in default_kernel
vectorized_follows_isa = kernels_vectorized and not vectorized_with_default
default_loop_line = next((line.strip() for line in default_kernel.splitlines() if "tmp1 =" in line), "")

print(f"C++ compiler: {compiler} ({compiler_path}); vector instructions Inductor picked: {vector_isa}")
print(f"Inductor's caches after compiling, in a fresh folder: FX graph cache {fx_misses} misses, {fx_hits} hits; "
      f"AOTAutograd cache {aot_misses} misses, {aot_hits} hits; {so_files} shared libraries written")
print(f"the compiled gradients match eager's: {grads_match}")
print(f"\neager: {eager_ops} operators for forward, loss and backward ({eager_computing} not views); "
      f"{eager_hidden_buffers} new tensors of {HIDDEN[0]} x {HIDDEN[1]}")
print(f"compiled: {n_kernel_calls} kernel calls: {n_cpp_kernels} C++ kernels Inductor wrote "
      f"({cpp_kernel_names}) and {n_extern_calls} library calls ({', '.join(extern_names)}); "
      f"{buffers_allocated} buffers allocated, {compiled_hidden_buffers} of them {HIDDEN[0]} x {HIDDEN[1]}; "
      f"{buffers_reused} reused in place")
print(f"the forward returns the loss and {saved_for_backward} tensors for backward: {forward_returns}")
print(f"buffers the backward reuses: {', '.join(f'{a} = {b}' for a, b in backward_reuses)}; ReLU's backward "
      f"writes over the saved ReLU output: {relu_backward_in_place}")
print(f"\nthe ReLU kernel on {THREADS} threads: OpenMP {uses_openmp}, at::vec::Vectorized {kernels_vectorized}")
print(f"compiled again on 1 thread: OpenMP {openmp_on_one_thread}; with ATEN_CPU_CAPABILITY=default: "
      f"at::vec::Vectorized {vectorized_with_default} ({default_loop_line})")
print("\n--- the forward wrapper's call(), as Inductor wrote it ---")
print(forward_call.rstrip())
print("\n--- cpp_fused_relu_0, the C++ kernel for ReLU ---")
print(relu_kernel.rstrip())

fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
groups = [("eager: operators\n(forward, loss, backward)", [("views", eager_ops - eager_computing, "C7"),
                                                           ("computing", eager_computing, "C0")]),
          ("compiled: kernel calls", [("library\n(BLAS)", n_extern_calls, "C2"),
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

"""Which machine, software and device produced the numbers on these pages, as a proof reads them.

Every timing on the site depends on the processor, its vector units, the thread count
and the torch build; this stamp records them for the build that ran the proofs. The CPU's
vector features come from /proc/cpuinfo (Linux; elsewhere "unknown"), the BLAS library from the
BLAS_INFO line of torch.__config__.show(), and the kernels' vector level from torch itself.
"""
import os
import platform
import subprocess

import torch


def cpu_model():
    """The processor's marketing name, as best this platform tells it."""
    system = platform.system()
    if system == "Linux":
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
    elif system == "Darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                                 capture_output=True, text=True, timeout=5)
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


def device_name():
    """The accelerator torch would use, or "CPU only"."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    if torch.backends.mps.is_available():
        return "Apple MPS"
    return "CPU only"


machine = cpu_model()
cores = os.cpu_count()
os_name = f"{platform.system()} {'.'.join(platform.release().split('.')[:2])}"
python = platform.python_version()
torch_version = str(torch.__version__)
device = device_name()
threads = torch.get_num_threads()
cpu_capability = torch.backends.cpu.get_cpu_capability()
arch = platform.machine()


def vector_features():
    """The x86 vector features the pages mention, as /proc/cpuinfo lists them."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    except OSError:
        flags = None
    if flags is None:
        return "unknown"
    wanted = ["avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16"]
    return ", ".join(w for w in wanted if w in flags) or "none of " + ", ".join(wanted)


cpu_features = vector_features()
# The BLAS that torch's matrix products call, as the build's configuration names it (BLAS_INFO).
blas_info = next((part.split("=", 1)[1] for part in torch.__config__.show().replace(",", " ").split()
                  if part.startswith("BLAS_INFO=")), "")
blas = {"mkl": "MKL", "open": "OpenBLAS", "openblas": "OpenBLAS", "accelerate": "Accelerate"}.get(
    blas_info.lower(), blas_info or "not named by torch.__config__.show()")

rows = [("machine", machine), ("architecture", arch), ("logical cores", cores),
        ("OS", os_name), ("Python", python), ("torch", torch_version),
        ("device", device), ("intra-op threads", threads), ("CPU kernels", cpu_capability),
        ("CPU features", cpu_features), ("BLAS", blas)]
for key, value in rows:
    print(f"{key:<17}{value}")

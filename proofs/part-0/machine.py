"""Which machine, software and device produced the numbers on these pages.

Every timing on the site depends on the processor, its vector units, the thread count
and the torch build; this stamp records them for the build that ran the proofs.
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

rows = [("machine", machine), ("architecture", arch), ("logical cores", cores),
        ("OS", os_name), ("Python", python), ("torch", torch_version),
        ("device", device), ("intra-op threads", threads), ("CPU kernels", cpu_capability)]
for key, value in rows:
    print(f"{key:<17}{value}")

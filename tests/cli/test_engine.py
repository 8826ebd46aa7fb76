"""The engine stx was built against: LibTorch 2.11.0 from the PyPI wheel (requirements.txt),
its CUDA build — CUDA and NCCL compiled in and libtorch_cuda linked, whether or not this machine
has a GPU — as C++20, and nothing from Debian's LibTorch 1.13 in the process; one BLAS serves
every matrix product: with STX_BLAS=openblas (setup.sh's build) OpenBLAS's sgemm_ is the one the
process resolves, ahead of the MKL inside libtorch_cpu.so (kernels/blas.h).
Run: python3 tests/cli/test_engine.py build/stx"""
import os
import re
import subprocess
import sys

from checks import Checks, run_stx

STX = os.path.abspath(sys.argv[1])
check = Checks()

r = run_stx(STX, ["--version"])
print(r.stdout)
check("--version exits 0", r.returncode == 0, r.stderr)
check("LibTorch 2.11.0", re.search(r"^LibTorch 2\.11\.0\b", r.stdout, re.M) is not None, r.stdout)
check("CUDA compiled in (13.0)", re.search(r"^CUDA: yes \(13\.0\)$", r.stdout, re.M) is not None, r.stdout)
check("NCCL compiled in", re.search(r"^NCCL: yes$", r.stdout, re.M) is not None, r.stdout)
check("built as C++20", re.search(r"^C\+\+: 202002$", r.stdout, re.M) is not None, r.stdout)
blas = re.search(r"^BLAS: (.*) \(built with STX_BLAS=(\w+)\)$", r.stdout, re.M)
check("--version names the BLAS and how it was built", blas is not None, r.stdout)
if blas:
    if blas.group(2) == "openblas":
        check("STX_BLAS=openblas: sgemm_ resolves to OpenBLAS, not the MKL inside libtorch_cpu",
              blas.group(1).startswith("OpenBLAS") and "libopenblas" in blas.group(1), blas.group(1))
    else:
        check("STX_BLAS=mkl: sgemm_ resolves to libtorch_cpu's MKL", "libtorch_cpu" in blas.group(1), blas.group(1))

libs = subprocess.run(["ldd", STX], capture_output=True, text=True).stdout
torch_libs = [l.split("=>")[1].split("(")[0].strip() for l in libs.splitlines() if "=>" in l and "libtorch" in l]
check("links libtorch_cuda.so", any(l.endswith("libtorch_cuda.so") for l in torch_libs), libs)
check("every LibTorch library from the wheel (site-packages/torch/lib)",
      torch_libs and all("/site-packages/torch/lib/" in l for l in torch_libs), torch_libs)
check("nothing unresolved", "not found" not in libs, [l for l in libs.splitlines() if "not found" in l])
check.finish()

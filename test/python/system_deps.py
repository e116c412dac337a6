"""What some tests need from outside pip: a Vulkan driver, spirv-tools, ptxas...

`pip install ".[test]"` brings every Python dependency; a few tests also need
system packages. Outside CI such a test SKIPS when its package is missing,
and the session ends with one line per missing package saying how many tests
it cost and the command that installs it (conftest.py prints it). Under
`CI=true` (what .ci/run runs with) the same tests FAIL instead: CI installs
these packages, so a missing one there is a broken CI, not a reason to skip.
A CUDA device is the exception: CI has no GPU, so those tests skip there too.

    require("vulkan")          # in a test or fixture (also "wgpu", "spirv-tools", ...)
    @pytest.mark.requires("ptxas")
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
from dataclasses import dataclass
from typing import Callable

import pytest

#: CI=true (or 1/yes): every system dependency but a GPU is required.
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")

APT_VULKAN = (
    "apt-get install -y mesa-vulkan-drivers libvulkan1 vulkan-validationlayers spirv-tools"
)


@dataclass(frozen=True)
class Dependency:
    name: str
    what: str  # how a person calls it
    install: str  # the command that provides it
    probe: Callable[[], str | None]  # None when present, else why not
    required_in_ci: bool = True
    #: The Python package (pip name = module name) it also needs, named in
    #: the install command when it is not importable.
    pip: str | None = None

    def install_command(self) -> str:
        """`install`, preceded by `pip install <pip>` when that package is missing."""
        if self.pip and _not_importable(self.pip):
            return f"pip install {self.pip} and {self.install}"
        return self.install


def _not_importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a broken install, or a module without a spec
        return False


def _vulkan() -> str | None:
    from poot_mlir.runtime import vulkan as vk

    ok, why = vk.available("lavapipe")
    return None if ok else why.split("; install")[0]  # the summary names the install


def _wgpu() -> str | None:
    from poot_mlir.runtime import wgpu

    ok, why = wgpu.available("lavapipe")
    return None if ok else why.split("; pip install")[0]


def _tools(*names: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        missing = [n for n in names if not shutil.which(n)]
        return f"{' / '.join(missing)} not on PATH" if missing else None

    return probe


def ptxas_path() -> str | None:
    """$POOT_PTXAS, else ptxas on PATH, else the CUDA toolkit's default place
    (POOT_PTXAS=/nonexistent plays a machine without one)."""
    path = os.environ.get("POOT_PTXAS") or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    return path if os.path.exists(path) else None


def _openmp() -> str | None:
    from poot_mlir.compiler.cpu import find_openmp

    return None if find_openmp() else "no OpenMP runtime (libomp.so.5 or libiomp5)"


def _ptxas() -> str | None:
    return None if ptxas_path() else "ptxas not on PATH nor in /usr/local/cuda/bin"


def _validation_layer() -> str | None:
    for root in ("/usr/share/vulkan/explicit_layer.d", "/etc/vulkan/explicit_layer.d",
                 "/usr/local/share/vulkan/explicit_layer.d"):
        if os.path.isdir(root) and any("validation" in f for f in os.listdir(root)):
            return None
    return "no VK_LAYER_KHRONOS_validation manifest in explicit_layer.d"


def _torch() -> str | None:
    try:
        import torch  # noqa: F401
    except Exception as error:  # ImportError, or a broken install
        return f"torch does not import ({error.__class__.__name__}: {error})"
    return None


def _transformers() -> str | None:
    try:
        import transformers  # noqa: F401
    except Exception as error:  # ImportError, or a broken install
        return f"transformers does not import ({error.__class__.__name__}: {error})"
    return None


def _cuda() -> str | None:
    from poot_mlir.runtime import cuda

    ok, why = cuda.available()
    return None if ok else why


DEPENDENCIES = {
    d.name: d
    for d in (
        Dependency("vulkan", "a Vulkan driver (Mesa lavapipe)", APT_VULKAN, _vulkan, pip="vulkan"),
        Dependency(
            "wgpu", "wgpu-py on lavapipe", f'pip install "wgpu==0.32.0" and {APT_VULKAN}', _wgpu
        ),
        Dependency("spirv-tools", "spirv-as / spirv-val", APT_VULKAN, _tools("spirv-as", "spirv-val")),
        Dependency("vulkan-validation", "the Vulkan validation layer", APT_VULKAN, _validation_layer),
        Dependency(
            "ptxas",
            "ptxas (CUDA toolkit)",
            "install a CUDA toolkit (ptxas on PATH or in /usr/local/cuda/bin)",
            _ptxas,
        ),
        Dependency(
            "amdgpu-llvm", "an LLVM 22 llc with the AMDGPU target, ld.lld and llvm-readelf",
            "apt-get install -y llvm-22 lld-22", _tools("llc-22", "ld.lld-22", "llvm-readelf-22"),
        ),
        Dependency("torch", "PyTorch", "pip install torch", _torch),
        Dependency(
            "transformers", "Hugging Face transformers (random-init models, no download)",
            'pip install "transformers==5.25.0"', _transformers,
        ),
        Dependency(
            "openmp", "an OpenMP runtime for the CPU target's threads",
            "apt-get install -y libomp-dev (or pip install intel-openmp)", _openmp,
        ),
        Dependency(
            "cuda", "a CUDA GPU", "run on a machine with an NVIDIA GPU and cuda-python",
            _cuda, required_in_ci=False,
        ),
    )
}

#: name -> [why, number of tests skipped for it]
MISSING: dict[str, list] = {}
_SKIP_PREFIX = "missing system dependency "


@functools.cache
def why_missing(name: str) -> str | None:
    """None when dependency `name` is present, else the reason (probed once)."""
    return DEPENDENCIES[name].probe()


def require(name: str) -> None:
    """Skip (outside CI) or fail (under CI=true) the calling test when
    dependency `name` is missing."""
    dep = DEPENDENCIES[name]
    why = why_missing(name)
    if why is None:
        return
    if IN_CI and dep.required_in_ci:
        pytest.fail(
            f"{dep.what} is required under CI=true and is missing: {why}\n"
            f"install it with: {dep.install_command()}",
            pytrace=False,
        )
    MISSING.setdefault(name, [why, 0])
    pytest.skip(f"{_SKIP_PREFIX}{name!r}: {dep.what} ({dep.install_command()})")


def count_skip(reason: str) -> None:
    """Count a skipped test against its dependency. Counted from the reports,
    not in `require`: a module-scoped fixture that skips is set up once and
    its skip reused for the module's other tests."""
    marker = reason.find(_SKIP_PREFIX)
    if marker < 0:
        return
    name = reason[marker + len(_SKIP_PREFIX) :].split(":")[0].strip("'")
    if name in MISSING:
        MISSING[name][1] += 1


def summary_lines() -> list[str]:
    """One line per install command that would bring back skipped tests."""
    groups: dict[str, list] = {}  # install -> [reasons, count, required in CI]
    for name, (why, count) in MISSING.items():
        dep = DEPENDENCIES[name]
        group = groups.setdefault(dep.install_command(), [[], 0, False])
        group[0].append(f"{dep.what} ({why.rstrip('.')})")
        group[1] += count
        group[2] = group[2] or dep.required_in_ci
    return [
        f"{count} tests skipped, missing {'; '.join(reasons)}. To run them: {install}"
        + (" (under CI=true they fail instead)" if required else " (CI skips them too)")
        for install, (reasons, count, required) in groups.items()
    ]


def require_compiler_for(prebuilt, build_command: str) -> None:
    """On a CUDA machine whose artifacts at `prebuilt` are missing, the tests
    compile them, so the MLIR compiler must import here; if it does not,
    FAIL saying which build command makes the artifacts to carry instead."""
    try:
        import poot_mlir.compiler.gpu  # noqa: F401
    except Exception:
        pytest.fail(
            f"CUDA is here but there is neither the MLIR compiler nor prebuilt artifacts at {prebuilt}: "
            f"run `{build_command}` on the build machine and carry bench/artifacts",
            pytrace=False,
        )

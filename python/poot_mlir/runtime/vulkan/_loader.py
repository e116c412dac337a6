"""Import of the `vulkan` cffi package, with the environment Mesa wants.

Kept apart so that `import poot_mlir.runtime.vulkan` works (and can report a
clear `VulkanUnavailable`) on a machine with no Vulkan at all.
"""

from __future__ import annotations

import glob
import os
import tempfile
from types import ModuleType

from .errors import VulkanUnavailable

INSTALL_HINT = (
    "install a Vulkan loader and driver, e.g. on Debian/Ubuntu "
    "`apt-get install -y libvulkan1 mesa-vulkan-drivers` (Mesa lavapipe, a CPU "
    "Vulkan device), and the Python bindings with `pip install vulkan`"
)

_module: ModuleType | None = None


def _private_dir(name: str) -> str | None:
    """A per-user directory under the temp dir (mode 0700), or None if it
    cannot be made or belongs to someone else."""
    path = os.path.join(tempfile.gettempdir(), f"{name}-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        if os.stat(path).st_uid != os.getuid():
            return None
    except OSError:
        return None
    return path


def default_environment() -> None:
    """Give Mesa a runtime and a shader-cache directory when the environment
    names none. Compute needs neither (only the window-system code behind
    `vulkaninfo` complains about a missing XDG_RUNTIME_DIR), but CI
    containers often have an unwritable $HOME, and the shader cache is what
    makes a kernel's first dispatch fast in the next process (lavapipe
    compiles at the first dispatch: ~60 ms cold, ~8 ms from the cache)."""
    for var, name in (
        ("XDG_RUNTIME_DIR", "poot-xdg-runtime"),
        ("MESA_SHADER_CACHE_DIR", "poot-mesa-shader-cache"),
    ):
        if not os.environ.get(var):
            path = _private_dir(name)
            if path is not None:
                os.environ[var] = path


def lavapipe_icds() -> list[str]:
    """Paths of installed lavapipe ICD manifests."""
    found: list[str] = []
    for root in ("/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/etc/vulkan/icd.d"):
        found += sorted(glob.glob(os.path.join(root, "lvp_icd*.json")))
    return found


def load() -> ModuleType:
    """The `vulkan` module, or `VulkanUnavailable` naming what is missing."""
    global _module
    if _module is not None:
        return _module
    default_environment()
    try:
        import vulkan  # noqa: PLC0415 (deliberately lazy)
    except ModuleNotFoundError as e:
        raise VulkanUnavailable(
            f"the `vulkan` Python package is not installed ({e}); {INSTALL_HINT}"
        ) from e
    except OSError as e:
        # The package dlopens libvulkan.so.1 at import time.
        raise VulkanUnavailable(
            f"the Vulkan loader library could not be loaded ({e}); {INSTALL_HINT}"
        ) from e
    _module = vulkan
    return vulkan

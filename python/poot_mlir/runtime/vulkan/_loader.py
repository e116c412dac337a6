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


def default_environment() -> None:
    """Give Mesa writable runtime and shader-cache directories when the
    environment names none (CI containers often have no $HOME cache and no
    XDG_RUNTIME_DIR, and Mesa then warns or fails to cache)."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="poot-xdg-")
    if not os.environ.get("MESA_SHADER_CACHE_DIR"):
        # One per user, kept across runs: the shader cache is what makes a
        # kernel's second first-dispatch fast.
        path = os.path.join(tempfile.gettempdir(), f"poot-mesa-shader-cache-{os.getuid()}")
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.environ["MESA_SHADER_CACHE_DIR"] = path


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

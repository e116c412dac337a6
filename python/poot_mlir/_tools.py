"""Console entry points for the native tools shipped inside the package."""

import os
import sys
from pathlib import Path


def tool_path(name: str) -> Path:
    """Path of a native tool shipped in poot_mlir/_bin."""
    return Path(__file__).resolve().parent / "_bin" / name


def poot_opt() -> None:
    """`poot-opt`: exec the native driver with the same arguments."""
    path = tool_path("poot-opt")
    os.execv(str(path), [str(path), *sys.argv[1:]])

"""What the installed package carries besides code: a version, type hints."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import poot_mlir


def test_version_is_the_distributions() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", poot_mlir.__version__)
    try:
        installed = importlib.metadata.version("poot_mlir")
    except importlib.metadata.PackageNotFoundError:
        return  # a dev tree (PYTHONPATH=build/python_packages): no distribution
    assert installed == poot_mlir.__version__


def test_package_is_typed() -> None:
    # PEP 561: type checkers read the package's annotations.
    assert (Path(poot_mlir.__file__).parent / "py.typed").is_file()

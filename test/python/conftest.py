"""Shared pytest fixtures and hooks for the Python tests."""

from __future__ import annotations

import os

import numpy as np
import pytest

import system_deps


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires(*names): needs these system dependencies (system_deps.py): skipped "
        "without them, failed under CI=true",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before fixtures: a fixture that opens a Vulkan device must not error.
    for marker in item.iter_markers("requires"):
        for name in marker.args:
            system_deps.require(name)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and isinstance(report.longrepr, tuple):
        system_deps.count_skip(str(report.longrepr[2]))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    lines = system_deps.summary_lines()
    if not lines:
        return
    terminalreporter.write_sep("-", "poot_mlir: system packages not installed")
    for line in lines:
        terminalreporter.write_line(line)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A fresh random generator per test. The seed comes from os.urandom
    (or POOT_TEST_SEED to reproduce a failure) and is printed, so pytest
    shows it beside any failure."""
    seed = int(os.environ.get("POOT_TEST_SEED") or int.from_bytes(os.urandom(8), "little"))
    print(f"{request.node.nodeid}: POOT_TEST_SEED={seed}")
    return np.random.default_rng(seed)


@pytest.fixture(scope="module", params=["vulkan", "wgpu"])
def vulkan(request: pytest.FixtureRequest):
    """A lavapipe device through raw Vulkan, then through wgpu (the attention
    kernel tests compile for its client: `attention_cases.run_on`). A module
    may define its own `vulkan` fixture instead."""
    from poot_mlir.runtime.gpu import make_device

    system_deps.require(request.param)
    backend = make_device("wgpu-lavapipe" if request.param == "wgpu" else "lavapipe")
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def hf():
    """(torch, transformers) for the Hugging Face model tests: required (a
    failure under CI=true, a skip naming the install otherwise)."""
    system_deps.require("torch")
    system_deps.require("transformers")
    import torch
    import transformers

    return torch, transformers

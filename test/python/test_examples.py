"""The README's main job runs end to end: trace, fuse, compile for the CPU,
decode, and every step matches the float64 oracle."""

import pytest

from poot_mlir.examples import decode


def test_decode_example_runs_and_matches_oracle(capsys):
    assert decode.main(["--steps", "5", "--layers", "2", "--cap", "16"]) == 0
    out = capsys.readouterr().out
    assert "fused 2 attention ops" in out
    assert "every step matched the float64 oracle" in out


@pytest.mark.requires("vulkan")
def test_decode_example_on_vulkan_matches_oracle(capsys):
    """The same decoder, the whole step as SPIR-V kernels on the Vulkan
    device (lavapipe in CI), the KV cache resident there."""
    assert decode.main(["--steps", "4", "--cap", "16", "--target", "vulkan"]) == 0
    out = capsys.readouterr().out
    assert "the whole step as kernels, state on the device" in out
    assert "every step matched the float64 oracle" in out


@pytest.mark.requires("wgpu")
def test_decode_example_on_wgpu_matches_oracle(capsys):
    """The same decoder, the whole step as SPIR-V kernels compiled for wgpu
    and planned from the adapter's limits, run through wgpu (lavapipe in CI)."""
    assert decode.main(["--steps", "4", "--cap", "16", "--target", "wgpu"]) == 0
    out = capsys.readouterr().out
    assert "compiled for wgpu " in out and "state on the device" in out
    assert "every step matched the float64 oracle" in out


@pytest.mark.requires("vulkan")
def test_serve_example_on_vulkan_matches_oracle(capsys):
    """The serving example with its whole paged step on the Vulkan device
    (it ran as a CPU host program calling GPU attention before): continuous
    batching, prefix reuse and eviction with the pools resident on the
    device, every request against the float64 oracle. (This scenario makes
    no copy-on-write block copy, so DeviceRunner's write-back of host edits
    is not exercised here.)"""
    from poot_mlir.examples import serve

    argv = ["--check", "--quiet", "--layers", "1", "--rows", "3", "--blocks", "10", "--target", "vulkan"]
    assert serve.main(argv) == 0
    out = capsys.readouterr().out
    assert "(the whole step as SPIR-V)" in out
    assert "every request matched running it alone through the float64 oracle" in out

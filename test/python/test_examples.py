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


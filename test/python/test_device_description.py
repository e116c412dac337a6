"""The device is described once (lib/Transforms/DeviceDescription.h): the
planner pass, the pipelines and Python's `Device` share one set of defaults."""

from __future__ import annotations

import dataclasses

from poot_mlir.compiler import devices


def test_device_defaults_mirror_the_cpp_description() -> None:
    from poot_mlir._mlir_libs import _pootTargets

    cpp = _pootTargets.device_defaults()
    python = {
        f.name: f.default for f in dataclasses.fields(devices.Device) if f.default is not dataclasses.MISSING
    }
    mirrored = {"vector_width", "max_splits", "wide_head_mma", "max_unroll", "max_keys_per_load", "jam_rows",
                "batch_invariant"}
    assert mirrored <= python.keys() and mirrored <= cpp.keys()
    for name in mirrored:
        assert python[name] == cpp[name], (name, python[name], cpp[name])

"""runtime.wgpu and the SPIR-V compiled for it (client=wgpu), on Mesa
lavapipe through wgpu-py: every kernel is accepted by naga (wgpu's shader
module creation) and by spirv-val; the device description comes from the
adapter's limits; kernels and dispatches wgpu cannot run are refused before
anything is submitted. (The kernels' numerics against the oracle:
test_attention_kernels.py and test_step_gpu.py, on both runtimes.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from attention_cases import FORMS, Form, build  # noqa: E402
from poot_mlir import errors, oracle  # noqa: E402
from poot_mlir.compiler import devices, gpu  # noqa: E402
from poot_mlir.compiler.gpu import compile_gpu  # noqa: E402
from poot_mlir.examples.decoder import DecoderConfig, build_decoder, init_state, init_weights  # noqa: E402
from poot_mlir.runtime import wgpu as wg  # noqa: E402
from poot_mlir.runtime.program import ProgramArtifact  # noqa: E402
from system_deps import require  # noqa: E402
from test_cpu_ops import _OPS, _program  # noqa: E402
from test_cpu_runtime import paged_module  # noqa: E402

WGPU = devices.WGPU_LAVAPIPE


@pytest.fixture(scope="module")
def device():
    require("wgpu")
    dev = wg.Device(prefer="lavapipe")
    yield dev
    dev.close()


def _step_kernels(path: Path) -> list[tuple[Path, str, int]]:
    manifest = json.loads((path / "manifest.json").read_text())
    found = {}
    for program in manifest["programs"].values():
        for command in program["commands"]:
            if "launch" in command:
                launch = command["launch"]
                found[(launch["kernel"], launch["entry"])] = len(launch["args"])
    return [(path / k, e, n) for (k, e), n in sorted(found.items())]


def _attention_kernels(path: Path) -> list[tuple[Path, str, int]]:
    manifest = json.loads((path / "manifest.json").read_text())
    return [
        (path / launch["kernel"], launch["entry"], len(launch["args"]))
        for attention in manifest["attention"]
        for launch in attention["launches"]
    ]


@pytest.fixture(scope="module")
def wgpu_kernels(tmp_path_factory):
    """Every kernel of the whole-step tests and of the attention forms (a
    streaming and a split-KV plan each), compiled for wgpu."""
    root = tmp_path_factory.mktemp("wgpu")
    rng = np.random.default_rng(0)
    kernels = []
    kernels += _step_kernels(compile_gpu(build_decoder(DecoderConfig(layers=1, cap=16)).finish(),
                                              WGPU, root / "decoder"))
    kernels += _step_kernels(compile_gpu(str(paged_module()), WGPU, root / "paged"))
    ops = [op for op in _OPS if all(t not in op[2] for t in ("f16", "bf16", "f64"))]
    kernels += _step_kernels(compile_gpu(_program(ops)[0], WGPU, root / "ops", fuse=False))
    for form in FORMS:
        text, _ = build(form, rng)
        for cus in (1, 64):
            out = root / f"{form.name}-{cus}"
            kernels += _attention_kernels(gpu.compile_gpu(text, WGPU.with_limits(compute_units=cus), out))
    return kernels


def test_every_kernel_passes_spirv_val(wgpu_kernels):
    """spirv-val (Vulkan 1.1 rules) accepts every kernel compiled for wgpu,
    and none declares push constants, read-only storage or 8-bit types."""
    require("spirv-tools")
    assert len(wgpu_kernels) > 100
    for path in sorted({p for p, _, _ in wgpu_kernels}):
        subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(path)], check=True)
        text = subprocess.run(["spirv-dis", str(path)], check=True, capture_output=True,
                              text=True).stdout
        for refused in ("PushConstant", "NonWritable", "Int8", "8BitAccess"):
            assert refused not in text, f"{path.name}: {refused}"
        # spirv-dis spells an infinite or NaN f32 literal 0x1p+128, 0x1.8p+128.
        assert not re.search(r"0x1(\.[0-9a-f]+)?p\+128", text), path.name


def test_every_kernel_is_accepted_by_naga(device, wgpu_kernels):
    """wgpu's shader module creation (naga's SPIR-V reader and validator)
    and its compute pipeline creation accept every kernel."""
    for path, entry, args in wgpu_kernels:
        kern = device.load_kernel(path.read_bytes(), entry=entry, num_buffers=args)
        assert kern.entry == entry and kern.num_buffers == args


def test_vulkan_client_kernels_are_refused_with_the_fix(device, tmp_path):
    """A step compiled for raw Vulkan stores bools as bytes: the artifact is
    refused on the wgpu backend, and its kernel by the runtime, each saying
    to compile for wgpu."""
    path = compile_gpu(str(paged_module()), devices.VULKAN_LAVAPIPE, tmp_path / "vk")
    with pytest.raises(errors.PootError, match="client='wgpu'"):
        ProgramArtifact(path, "wgpu-lavapipe")
    eight_bit = [k for k in _step_kernels(path) if b"SPV_KHR_8bit_storage" in k[0].read_bytes()]
    assert eight_bit
    kernel, entry, args = eight_bit[0]
    with pytest.raises(wg.KernelError, match="Int8.*client='wgpu'"):
        device.load_kernel(kernel.read_bytes(), entry=entry, num_buffers=args)


def test_kernel_past_the_adapters_workgroup_storage_is_refused(device, tmp_path):
    """A plan for a description claiming more workgroup storage than the
    adapter has is refused when its kernel loads, naming the limit."""
    form = Form("wide", key_width=16, value_width=256, key_len=64)
    text, _ = build(form, np.random.default_rng(1))
    path = gpu.compile_gpu(text, WGPU.with_limits(workgroup_memory=1 << 20, compute_units=1), tmp_path)
    kernel, entry, args = _attention_kernels(path)[0]
    with pytest.raises(wg.KernelError, match="workgroup memory.*32768"):
        device.load_kernel(kernel.read_bytes(), entry=entry, num_buffers=args)


def test_description_from_the_adapters_limits(device):
    """from_wgpu_limits reads the planner's numbers from the adapter; the
    preset says what lavapipe reports."""
    props = device.properties
    desc = devices.from_wgpu_limits(props["limits"], name="wgpu-lavapipe",
                                    compute_units=WGPU.compute_units,
                                    subgroup_size=WGPU.subgroup_size)
    for field in ("workgroup_memory", "max_grid_x", "max_grid_y", "max_buffer_bytes", "client", "target"):
        assert getattr(desc, field) == getattr(WGPU, field), field
    assert desc.workgroup_memory == props["limits"]["max-compute-workgroup-storage-size"]
    with pytest.raises(ValueError, match="64"):
        devices.from_wgpu_limits({**props["limits"], "max-compute-invocations-per-workgroup": 32})


def test_dispatch_refusals_leave_the_buffers_unchanged(device, tmp_path, rng):
    """Wrong buffer count, a grid past the adapter's limit, a closed buffer,
    a buffer of another device: refused before anything is submitted."""
    form = Form("gqa", q_heads=8, kv_heads=2)
    text, inputs = build(form, rng)
    path = gpu.compile_gpu(text, WGPU.with_limits(compute_units=1), tmp_path)
    kernel, entry, nargs = _attention_kernels(path)[0]
    kern = device.load_kernel(kernel.read_bytes(), entry=entry, num_buffers=nargs)
    bufs = [device.buffer_from(inputs[n]) for n in ("q", "k", "v")]
    out = device.buffer_from(np.full(8 * 16, 7.0, np.float32))
    limit = device.properties["max_workgroup_count"][0]
    closed = device.empty(16)
    closed.close()
    with wg.Device(prefer="lavapipe") as other:
        stranger = other.empty(out.nbytes)
        for args, grid, match in (
            (bufs, (8, 1, 1), "takes 4 buffers"),
            (bufs + [out], (limit + 1, 1, 1), "outside the adapter's limit"),
            (bufs[:2] + [closed, out], (8, 1, 1), "closed"),
            (bufs + [stranger], (8, 1, 1), "another device"),
        ):
            with pytest.raises(wg.DispatchError, match=match):
                device.run([(kern, bufs + [out], (8, 1, 1)), (kern, args, grid)])
    np.testing.assert_array_equal(out.read(np.float32, 8 * 16), np.full(8 * 16, 7.0, np.float32))


def test_buffers_round_trip_ragged_bytes(device, rng):
    """WebGPU writes whole words; the runtime merges a ragged write with the
    bytes around it."""
    buf = device.buffer_from(np.arange(11, dtype=np.uint8))
    patch = rng.integers(0, 255, 5).astype(np.uint8)
    buf.write(patch, offset=3)
    want = np.arange(11, dtype=np.uint8)
    want[3:8] = patch
    np.testing.assert_array_equal(buf.read(np.uint8, 11), want)
    np.testing.assert_array_equal(buf.read(np.uint8, 3, offset=5), want[5:8])


def test_wgpu_kernels_run_on_raw_vulkan_too(tmp_path, rng):
    """SPIR-V compiled for wgpu is valid Vulkan: the decoder step runs on the
    raw Vulkan runtime and matches the oracle."""
    require("vulkan")
    config = DecoderConfig(layers=1, cap=16)
    tracer = build_decoder(config)
    reference = tracer.mlir()
    art = ProgramArtifact(compile_gpu(tracer.finish(), WGPU, tmp_path), "lavapipe")
    weights = init_weights(config, int(rng.integers(0, 1000)))
    sess, ref = art.session(init_state(config)), oracle.Session(reference, init_state(config))
    for step in range(3):
        inputs = {"pos": np.int32(step), "token": np.array([[step + 1]], np.int32), **weights}
        got, want = sess.step(inputs).named["logits"], ref.step(inputs).named["logits"]
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * float(np.abs(want).max()))
    art.close()


_CHILD = """
import json, sys
import numpy as np
from poot_mlir.runtime.program import ProgramArtifact
art = ProgramArtifact(sys.argv[1], "wgpu-lavapipe")
state = {p.state: np.zeros(p.shape, p.dtype) for p in art.signature.args if p.state is not None}
sess = art.session(state)
program = art.programs[art.signature.name]
art.kernel(next(c["launch"] for c in program["commands"] if "launch" in c))
mlir = sorted(m for m in sys.modules if m.split(".")[0] == "mlir" or "_mlir_libs" in m
              or m.startswith(("poot_mlir.ir", "poot_mlir.dialects", "poot_mlir.passmanager",
                               "poot_mlir.compiler")))
print(json.dumps({"mlir_modules": mlir, "state": sorted(sess.state)}))
"""


def test_the_wgpu_runtime_imports_no_mlir(tmp_path):
    """Loading a whole-step artifact, a session and a kernel on wgpu
    imports no MLIR bindings and no compiler module."""
    require("wgpu")
    path = compile_gpu(str(paged_module()), WGPU, tmp_path / "paged")
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["mlir_modules"] == [] and result["state"]


def test_no_wayland_noise_without_xdg_runtime_dir() -> None:
    """Opening a wgpu device where XDG_RUNTIME_DIR is unset (containers, CI)
    prints nothing: Mesa's Wayland probe used to print four
    "error: XDG_RUNTIME_DIR is invalid" lines per process (issue 26)."""
    require("wgpu")
    import os

    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    script = "from poot_mlir.runtime import wgpu as wg; wg.Device(prefer='lavapipe'); print('ok')"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert "XDG_RUNTIME_DIR" not in proc.stderr and "error" not in proc.stderr.lower(), proc.stderr

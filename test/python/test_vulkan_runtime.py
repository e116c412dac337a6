"""poot_mlir.runtime.vulkan on Mesa lavapipe (a CPU Vulkan device).

The kernels are SPIR-V assembly written here, in the shape MLIR's SPIR-V
lowering emits (SPIR-V 1.0, StorageBuffer storage class, argument i at set 0 /
binding i, a scalar in its own one-element buffer, LocalSize baked in),
assembled with `spirv-as` and checked with `spirv-val`.

Without Vulkan (or spirv-tools) these tests skip, and the session ends with
the command that installs them; under CI=true (CI installs lavapipe) they
fail instead: see system_deps.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from poot_mlir.errors import PootError
from poot_mlir.runtime import vulkan as vk

# Every test here runs kernels on lavapipe, assembled by spirv-tools.
pytestmark = pytest.mark.requires("vulkan", "spirv-tools")


# --- kernels ------------------------------------------------------------------

_HEADER = """
               OpCapability Shader
               OpExtension "SPV_KHR_storage_buffer_storage_class"
               OpMemoryModel Logical GLSL450
"""

# c[i] = a[i] + b[i] for i < n; n is an i32 scalar in its own buffer (binding 3).
ADD_F32 = _HEADER + """
               OpEntryPoint GLCompute %main "add_f32" %gid
               OpExecutionMode %main LocalSize 64 1 1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %arr_f32 ArrayStride 4
               OpDecorate %arr_i32 ArrayStride 4
               OpMemberDecorate %buf_f32 0 Offset 0
               OpMemberDecorate %buf_i32 0 Offset 0
               OpDecorate %buf_f32 Block
               OpDecorate %buf_i32 Block
               OpDecorate %a DescriptorSet 0
               OpDecorate %a Binding 0
               OpDecorate %b DescriptorSet 0
               OpDecorate %b Binding 1
               OpDecorate %c DescriptorSet 0
               OpDecorate %c Binding 2
               OpDecorate %n DescriptorSet 0
               OpDecorate %n Binding 3
       %void = OpTypeVoid
     %fnvoid = OpTypeFunction %void
       %bool = OpTypeBool
        %f32 = OpTypeFloat 32
        %u32 = OpTypeInt 32 0
        %i32 = OpTypeInt 32 1
      %v3u32 = OpTypeVector %u32 3
         %i0 = OpConstant %i32 0
         %u1 = OpConstant %u32 1
    %arr_f32 = OpTypeRuntimeArray %f32
    %arr_i32 = OpTypeArray %i32 %u1
    %buf_f32 = OpTypeStruct %arr_f32
    %buf_i32 = OpTypeStruct %arr_i32
   %pbuf_f32 = OpTypePointer StorageBuffer %buf_f32
   %pbuf_i32 = OpTypePointer StorageBuffer %buf_i32
       %pf32 = OpTypePointer StorageBuffer %f32
       %pi32 = OpTypePointer StorageBuffer %i32
        %pin = OpTypePointer Input %v3u32
        %gid = OpVariable %pin Input
          %a = OpVariable %pbuf_f32 StorageBuffer
          %b = OpVariable %pbuf_f32 StorageBuffer
          %c = OpVariable %pbuf_f32 StorageBuffer
          %n = OpVariable %pbuf_i32 StorageBuffer
       %main = OpFunction %void None %fnvoid
      %entry = OpLabel
         %g3 = OpLoad %v3u32 %gid
          %i = OpCompositeExtract %u32 %g3 0
         %pn = OpAccessChain %pi32 %n %i0 %i0
         %nv = OpLoad %i32 %pn
         %nu = OpBitcast %u32 %nv
        %inb = OpULessThan %bool %i %nu
               OpSelectionMerge %done None
               OpBranchConditional %inb %body %done
       %body = OpLabel
         %pa = OpAccessChain %pf32 %a %i0 %i
         %pb = OpAccessChain %pf32 %b %i0 %i
         %va = OpLoad %f32 %pa
         %vb = OpLoad %f32 %pb
         %vc = OpFAdd %f32 %va %vb
         %pc = OpAccessChain %pf32 %c %i0 %i
               OpStore %pc %vc
               OpBranch %done
       %done = OpLabel
               OpReturn
               OpFunctionEnd
"""

WG = 128  # wg_sum's workgroup size
# out[w] = sum(x[w*128 + l] for l < 128), w = wid.x + wid.y * nwg.x: a tree
# reduction in workgroup memory with one barrier per level (the barrier is
# what makes lanes see each other's partial sums).
WG_SUM = _HEADER + """
               OpEntryPoint GLCompute %main "wg_sum" %lid %wid %nwg
               OpExecutionMode %main LocalSize 128 1 1
               OpDecorate %lid BuiltIn LocalInvocationId
               OpDecorate %wid BuiltIn WorkgroupId
               OpDecorate %nwg BuiltIn NumWorkgroups
               OpDecorate %arr ArrayStride 4
               OpMemberDecorate %sbuf 0 Offset 0
               OpDecorate %sbuf Block
               OpDecorate %x DescriptorSet 0
               OpDecorate %x Binding 0
               OpDecorate %out DescriptorSet 0
               OpDecorate %out Binding 1
       %void = OpTypeVoid
     %fnvoid = OpTypeFunction %void
       %bool = OpTypeBool
        %f32 = OpTypeFloat 32
        %u32 = OpTypeInt 32 0
      %v3u32 = OpTypeVector %u32 3
         %u0 = OpConstant %u32 0
         %u1 = OpConstant %u32 1
         %u2 = OpConstant %u32 2
        %u64 = OpConstant %u32 64
     %ushare = OpConstant %u32 SHARED_ELEMS
       %u128 = OpConstant %u32 128
       %u264 = OpConstant %u32 264
        %arr = OpTypeRuntimeArray %f32
       %sbuf = OpTypeStruct %arr
      %psbuf = OpTypePointer StorageBuffer %sbuf
      %psf32 = OpTypePointer StorageBuffer %f32
       %sh_t = OpTypeArray %f32 %ushare
        %psh = OpTypePointer Workgroup %sh_t
      %pwf32 = OpTypePointer Workgroup %f32
      %pfu32 = OpTypePointer Function %u32
        %pin = OpTypePointer Input %v3u32
        %lid = OpVariable %pin Input
        %wid = OpVariable %pin Input
        %nwg = OpVariable %pin Input
          %x = OpVariable %psbuf StorageBuffer
        %out = OpVariable %psbuf StorageBuffer
         %sh = OpVariable %psh Workgroup
       %main = OpFunction %void None %fnvoid
      %entry = OpLabel
          %s = OpVariable %pfu32 Function
         %l3 = OpLoad %v3u32 %lid
          %l = OpCompositeExtract %u32 %l3 0
         %w3 = OpLoad %v3u32 %wid
         %wx = OpCompositeExtract %u32 %w3 0
         %wy = OpCompositeExtract %u32 %w3 1
         %n3 = OpLoad %v3u32 %nwg
         %nx = OpCompositeExtract %u32 %n3 0
        %wyn = OpIMul %u32 %wy %nx
          %w = OpIAdd %u32 %wx %wyn
         %wb = OpIMul %u32 %w %u128
         %gi = OpIAdd %u32 %wb %l
         %px = OpAccessChain %psf32 %x %u0 %gi
         %xv = OpLoad %f32 %px
        %psl = OpAccessChain %pwf32 %sh %l
               OpStore %psl %xv
               OpControlBarrier %u2 %u2 %u264
               OpStore %s %u64
               OpBranch %header
     %header = OpLabel
               OpLoopMerge %exit %cont None
               OpBranch %cond
       %cond = OpLabel
         %sv = OpLoad %u32 %s
       %more = OpUGreaterThan %bool %sv %u0
               OpBranchConditional %more %body %exit
       %body = OpLabel
     %active = OpULessThan %bool %l %sv
               OpSelectionMerge %joined None
               OpBranchConditional %active %add %joined
        %add = OpLabel
         %lo = OpLoad %f32 %psl
        %lis = OpIAdd %u32 %l %sv
        %phi = OpAccessChain %pwf32 %sh %lis
         %hi = OpLoad %f32 %phi
        %sum = OpFAdd %f32 %lo %hi
               OpStore %psl %sum
               OpBranch %joined
     %joined = OpLabel
               OpControlBarrier %u2 %u2 %u264
               OpBranch %cont
       %cont = OpLabel
       %half = OpShiftRightLogical %u32 %sv %u1
               OpStore %s %half
               OpBranch %header
       %exit = OpLabel
      %first = OpIEqual %bool %l %u0
               OpSelectionMerge %end None
               OpBranchConditional %first %write %end
      %write = OpLabel
        %ps0 = OpAccessChain %pwf32 %sh %u0
        %tot = OpLoad %f32 %ps0
         %po = OpAccessChain %psf32 %out %u0 %w
               OpStore %po %tot
               OpBranch %end
        %end = OpLabel
               OpReturn
               OpFunctionEnd
"""

# y[i] = 2 * f32(x[i]) with x an f16 storage buffer (needs the 16-bit
# storage feature enabled at device creation).
WIDEN_F16 = """
               OpCapability Shader
               OpCapability Float16
               OpCapability StorageBuffer16BitAccess
               OpExtension "SPV_KHR_storage_buffer_storage_class"
               OpExtension "SPV_KHR_16bit_storage"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "widen_f16" %gid
               OpExecutionMode %main LocalSize 32 1 1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %arr_h ArrayStride 2
               OpDecorate %arr_f ArrayStride 4
               OpMemberDecorate %buf_h 0 Offset 0
               OpMemberDecorate %buf_f 0 Offset 0
               OpDecorate %buf_h Block
               OpDecorate %buf_f Block
               OpDecorate %x DescriptorSet 0
               OpDecorate %x Binding 0
               OpDecorate %y DescriptorSet 0
               OpDecorate %y Binding 1
       %void = OpTypeVoid
     %fnvoid = OpTypeFunction %void
        %f16 = OpTypeFloat 16
        %f32 = OpTypeFloat 32
        %u32 = OpTypeInt 32 0
      %v3u32 = OpTypeVector %u32 3
         %u0 = OpConstant %u32 0
        %two = OpConstant %f32 2
      %arr_h = OpTypeRuntimeArray %f16
      %arr_f = OpTypeRuntimeArray %f32
      %buf_h = OpTypeStruct %arr_h
      %buf_f = OpTypeStruct %arr_f
     %pbuf_h = OpTypePointer StorageBuffer %buf_h
     %pbuf_f = OpTypePointer StorageBuffer %buf_f
         %ph = OpTypePointer StorageBuffer %f16
         %pf = OpTypePointer StorageBuffer %f32
        %pin = OpTypePointer Input %v3u32
        %gid = OpVariable %pin Input
          %x = OpVariable %pbuf_h StorageBuffer
          %y = OpVariable %pbuf_f StorageBuffer
       %main = OpFunction %void None %fnvoid
      %entry = OpLabel
         %g3 = OpLoad %v3u32 %gid
          %i = OpCompositeExtract %u32 %g3 0
        %pxi = OpAccessChain %ph %x %u0 %i
         %xh = OpLoad %f16 %pxi
         %xf = OpFConvert %f32 %xh
         %yv = OpFMul %f32 %xf %two
        %pyi = OpAccessChain %pf %y %u0 %i
               OpStore %pyi %yv
               OpReturn
               OpFunctionEnd
"""

SOURCES = {
    "add_f32": ADD_F32,
    "wg_sum": WG_SUM.replace("SHARED_ELEMS", str(WG)),
    # 10240 floats = 40 KiB of workgroup memory: more than lavapipe's 32 KiB.
    "wg_sum_40k": WG_SUM.replace("SHARED_ELEMS", "10240"),
    "widen_f16": WIDEN_F16,
}


# --- fixtures -----------------------------------------------------------------


@pytest.fixture(scope="module")
def spirv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Every kernel above, assembled (as SPIR-V 1.0, like MLIR's) and validated."""
    tools = [shutil.which(t) for t in ("spirv-as", "spirv-val")]
    tmp = tmp_path_factory.mktemp("spv")
    out = {}
    for name, text in SOURCES.items():
        src, binary = tmp / f"{name}.spvasm", tmp / f"{name}.spv"
        src.write_text(textwrap.dedent(text))
        subprocess.run(
            [tools[0], "--target-env", "spv1.0", str(src), "-o", str(binary)],
            check=True,
            capture_output=True,
            text=True,
        )
        val = subprocess.run(
            [tools[1], "--target-env", "vulkan1.1", str(binary)], capture_output=True, text=True
        )
        # The 40 KiB variant is valid SPIR-V; only a device can refuse it.
        assert val.returncode == 0, f"{name}: spirv-val: {val.stdout}{val.stderr}"
        out[name] = binary.read_bytes()
    return out


@pytest.fixture(scope="module")
def dev() -> vk.Device:
    device = _lavapipe()
    with device:
        yield device


def _lavapipe(**kwargs) -> vk.Device:
    """A lavapipe device (the module's `requires` marker has checked that
    there is one)."""
    return vk.Device(prefer="lavapipe", **kwargs)


def _nonzero(rng: np.random.Generator, n: int, dtype=np.float32) -> np.ndarray:
    """Values in ±[0.5, 2): never zero, so a kernel that writes nothing fails."""
    return (rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)).astype(dtype)


# --- tests --------------------------------------------------------------------


def test_lavapipe_properties(dev: vk.Device) -> None:
    p = dev.properties
    assert "llvmpipe" in p["device_name"] and p["device_type"] == "cpu" and p["is_lavapipe"]
    assert p["max_workgroup_shared_memory"] == 32 * 1024
    assert p["max_workgroup_invocations"] == 1024
    assert p["max_storage_buffer_range"] == 128 * 1024 * 1024
    assert p["subgroup_size"] == 8
    assert all(c >= 65535 for c in p["max_workgroup_count"])
    assert p["supports_float64"] and p["supports_int64"] and p["supports_float16"]
    assert p["supports_storage_buffer_16bit"]
    assert p["memory"] == "mapped"  # lavapipe memory is device-local and host-visible
    assert p["compute_units"] >= 1


@pytest.mark.parametrize("n", [1, 1000, 64 * 70 + 5])
def test_add_with_i32_scalar_buffer(dev, spirv, rng, n: int) -> None:
    kern = dev.load_kernel(spirv["add_f32"], entry="add_f32", num_buffers=4)
    assert kern.local_size == (64, 1, 1)
    a, b = _nonzero(rng, n), _nonzero(rng, n)
    groups = -(-n // 64)
    sentinel = np.float32(rng.uniform(3, 4))
    with (
        dev.buffer_from(a) as ba,
        dev.buffer_from(b) as bb,
        dev.buffer_from(np.full(groups * 64, sentinel, np.float32)) as bc,
        dev.scalar(n, np.int32) as bn,
    ):
        dev.dispatch(kern, [ba, bb, bc, bn], groups=(groups, 1, 1))
        c = bc.read()
        np.testing.assert_array_equal(c[:n], a + b)
        # The kernel read n from its buffer: lanes past n wrote nothing.
        assert (c[n:] == sentinel).all()
        # A Python int is passed the same way, in a transient one-i32 buffer.
        bc.write(np.full(groups * 64, sentinel, np.float32))
        dev.dispatch(kern, [ba, bb, bc, n - 1], groups=groups)
        c = bc.read(np.float32, groups * 64)
        np.testing.assert_array_equal(c[: n - 1], (a + b)[: n - 1])
        assert (c[n - 1 :] == sentinel).all()


@pytest.mark.parametrize("groups", [(1, 1, 1), (3, 1, 1), (17, 1, 1), (5, 4, 1)])
def test_workgroup_reduction_with_barriers(dev, spirv, rng, groups) -> None:
    kern = dev.load_kernel(spirv["wg_sum"])  # entry and num_buffers from the module
    assert (kern.entry, kern.num_buffers, kern.workgroup_memory_bytes) == ("wg_sum", 2, WG * 4)
    w = groups[0] * groups[1]
    x = _nonzero(rng, w * WG)
    with dev.buffer_from(x) as bx, dev.buffer_from(np.full(w, np.nan, np.float32)) as bo:
        dev.dispatch(kern, [bx, bo], groups=groups)
        got = bo.read()
    want = x.astype(np.float64).reshape(w, WG).sum(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * WG)


def test_dependent_dispatches_in_one_submit(dev, spirv, rng) -> None:
    add = dev.load_kernel(spirv["add_f32"], entry="add_f32", num_buffers=4)
    red = dev.load_kernel(spirv["wg_sum"], entry="wg_sum", num_buffers=2)
    w = 9
    n = w * WG
    a, b = _nonzero(rng, n), _nonzero(rng, n)
    with (
        dev.buffer_from(a) as ba,
        dev.buffer_from(b) as bb,
        dev.scalar(n) as bn,
        dev.buffer_from(np.full(n, np.nan, np.float32)) as bc,
        dev.buffer_from(np.full(w, np.nan, np.float32)) as bo,
    ):
        # wg_sum reads what add_f32 wrote: only the barrier between them
        # keeps the NaNs out.
        dev.run([(add, [ba, bb, bc, bn], n // 64), (red, [bc, bo], w)])
        want = (a + b).astype(np.float64).reshape(w, WG).sum(axis=1)
        np.testing.assert_allclose(bo.read(), want, rtol=1e-5, atol=1e-5 * WG)

        # The same sequence recorded once and replayed on new contents.
        with dev.record(
            [(add, [ba, bb, bc, bn], n // 64), (red, [bc, bo], w)], profile=True
        ) as rec:
            for _ in range(2):
                a, b = _nonzero(rng, n), _nonzero(rng, n)
                ba.write(a)
                bb.write(b)
                # A profiled run big enough to regrow the device's own pools
                # must leave the recording's untouched.
                assert len(dev.run([(add, [ba, bb, bc, bn], n // 64)] * 70, profile=True)) == 70
                times = rec.run()
                want = (a + b).astype(np.float64).reshape(w, WG).sum(axis=1)
                np.testing.assert_allclose(bo.read(), want, rtol=1e-5, atol=1e-5 * WG)
                assert len(times) == 2 and all(t >= 0 for t in times)


def test_f16_storage_buffer(dev, spirv, rng) -> None:
    kern = dev.load_kernel(spirv["widen_f16"])
    x = _nonzero(rng, 32 * 6, np.float16)
    with dev.buffer_from(x) as bx, dev.empty(x.size * 4) as by:
        dev.dispatch(kern, [bx, by], groups=6)
        np.testing.assert_array_equal(by.read(np.float32), 2 * x.astype(np.float32))


def test_staged_memory_path(spirv, rng) -> None:
    """Buffers that are not host-visible (a discrete GPU without resizable
    BAR) go through a staging buffer; forcing that on lavapipe tests it."""
    device = _lavapipe(memory="staged")
    with device as dev:
        assert dev.properties["memory"] == "staged"
        kern = dev.load_kernel(spirv["add_f32"])
        n = 300
        a, b = _nonzero(rng, n), _nonzero(rng, n)
        ba, bb, bc = dev.buffer_from(a), dev.buffer_from(b), dev.zeros(n * 4)
        dev.dispatch(kern, [ba, bb, bc, n], groups=5)
        np.testing.assert_array_equal(bc.read(np.float32), a + b)
        np.testing.assert_array_equal(ba.read(np.float32, (n // 2,), offset=8), a[2 : 2 + n // 2])
    assert bc.closed  # closing the device freed its buffers
    with pytest.raises(vk.VulkanError, match="closed"):
        bc.read(np.float32)


def test_kernel_cache_and_refusals(dev, spirv) -> None:
    k1 = dev.load_kernel(spirv["add_f32"], entry="add_f32", num_buffers=4)
    assert dev.load_kernel(spirv["add_f32"], entry="add_f32", num_buffers=4) is k1

    with pytest.raises(vk.KernelError, match=r"no entry point 'nope'.*add_f32"):
        dev.load_kernel(spirv["add_f32"], entry="nope", num_buffers=4)
    with pytest.raises(vk.KernelError, match="binding 3 but num_buffers=3"):
        dev.load_kernel(spirv["add_f32"], entry="add_f32", num_buffers=3)
    with pytest.raises(vk.KernelError, match="not a SPIR-V binary"):
        dev.load_kernel(SOURCES["add_f32"].encode())
    with pytest.raises(vk.KernelError, match="40960 bytes of workgroup memory.*32768"):
        dev.load_kernel(spirv["wg_sum_40k"])

    with dev.empty(256) as buf:
        with pytest.raises(vk.DispatchError, match="takes 4 buffers, got 2"):
            dev.dispatch(k1, [buf, buf], groups=1)
        with pytest.raises(vk.DispatchError, match="outside the device's limit"):
            dev.dispatch(k1, [buf, buf, buf, 1], groups=(1 << 20, 1, 1))
    with pytest.raises(vk.DispatchError, match="buffer 0 is closed"):
        dev.dispatch(k1, [buf, buf, buf, 1], groups=1)
    assert issubclass(vk.VulkanUnavailable, PootError)


def test_hung_run_times_out(spirv) -> None:
    """A run past `timeout_s` raises instead of blocking forever, and the
    device refuses further work (the run may still be in flight)."""
    device = _lavapipe(timeout_s=1e-9)
    with device as dev:
        kern = dev.load_kernel(spirv["wg_sum"])
        x, out = dev.zeros(4096 * WG * 4), dev.empty(4096 * 4)
        try:
            dev.dispatch(kern, [x, out], groups=4096)
        except vk.VulkanError as e:
            assert "did not finish within the timeout" in str(e)
        else:  # a driver that runs the work inside vkQueueSubmit never times out
            pytest.skip("this driver finished the run before the fence wait began")
        with pytest.raises(vk.VulkanError, match="unusable"):
            dev.dispatch(kern, [x, out], groups=1)


_CHILD = """
import json, sys
from poot_mlir.runtime import vulkan as vk
try:
    with vk.Device(prefer="lavapipe") as dev:
        result = {"ok": dev.properties["device_name"]}
except vk.VulkanUnavailable as e:
    result = {"unavailable": str(e)}
mlir = sorted(m for m in sys.modules if m.split(".")[0] == "mlir" or "_mlir_libs" in m
              or m.startswith(("poot_mlir.ir", "poot_mlir.dialects", "poot_mlir.passmanager",
                               "poot_mlir.compiler")))
result["mlir_modules"] = mlir
print(json.dumps(result))
"""


def _child(env_update: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "VK_DRIVER_FILES"}
    env.update(env_update)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(vk.__file__).parents[3]), env.get("PYTHONPATH")])
    )
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_runs_without_mlir(dev) -> None:
    """An artifact runs where no compiler is installed: no MLIR import."""
    result = _child({})
    assert "ok" in result and result["mlir_modules"] == []


def test_no_driver_is_a_clear_error(dev) -> None:
    result = _child({"VK_ICD_FILENAMES": "/nonexistent/icd.json"})
    msg = result["unavailable"]
    assert "no Vulkan driver" in msg and "mesa-vulkan-drivers" in msg


_VALIDATED = """
import sys
import numpy as np
from poot_mlir.runtime import vulkan as vk
spv = {name: open(path, "rb").read() for name, path in zip(sys.argv[1::2], sys.argv[2::2])}
try:
    devices = [vk.Device("lavapipe", validation=True),
               vk.Device("lavapipe", validation=True, memory="staged")]
except vk.VulkanUnavailable as e:
    print("NOLAYER" if "VK_LAYER_KHRONOS_validation" in str(e) else "NOVULKAN", e)
    raise SystemExit(0)
rng = np.random.default_rng(0)
for dev in devices:
    with dev:
        add, red = dev.load_kernel(spv["add_f32"]), dev.load_kernel(spv["wg_sum"])
        n = 4 * 128
        a, b = dev.buffer_from(rng.uniform(1, 2, n).astype(np.float32)), dev.scalar(n)
        c, out = dev.empty(n * 4), dev.empty(16)
        steps = [(add, [a, a, c, b], n // 64), (red, [c, out], 4)]
        dev.run(steps, profile=True)
        with dev.record(steps) as rec:
            rec.run()
            a.write(rng.uniform(1, 2, n).astype(np.float32))
            rec.run()
        out.read(np.float32, 4)
print("DONE")
"""


@pytest.mark.requires("vulkan-validation")
def test_no_validation_or_synchronization_errors(dev, spirv, tmp_path) -> None:
    """lavapipe runs a command buffer's dispatches one after another, so a
    missing barrier would still give right numbers there; Khronos
    synchronization validation reports it. Needs vulkan-validationlayers."""
    args = []
    for name in ("add_f32", "wg_sum"):
        path = tmp_path / f"{name}.spv"
        path.write_bytes(spirv[name])
        args += [name, str(path)]
    env = {k: v for k, v in os.environ.items() if k != "POOT_VULKAN_VALIDATION"}
    env["VK_LAYER_ENABLES"] = "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(vk.__file__).parents[3]), env.get("PYTHONPATH")])
    )
    out = subprocess.run(
        [sys.executable, "-c", _VALIDATED, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    text = out.stdout + out.stderr
    assert "NOVULKAN" not in out.stdout, text
    assert "NOLAYER" not in out.stdout, text
    assert out.returncode == 0 and "DONE" in out.stdout, text
    assert "Validation Error" not in text and "SYNC-HAZARD" not in text, text

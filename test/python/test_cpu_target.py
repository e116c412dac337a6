"""The CPU target's host description, build modes and artifact cache: the
detected cores and vector width and their overrides, serial vs OpenMP
artifacts computing the same numbers, a refused OpenMP build when no runtime
is found, and compiled artifacts reused by module hash (and not reused when
anything that decides them changes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from poot_mlir import errors, oracle
from poot_mlir.compiler import devices
from poot_mlir.compiler.cpu import compile_cpu
from poot_mlir.runtime.cpu import CpuArtifact
from system_deps import require

LINEAR = """
func.func @step(%x: tensor<2x3x64xf32> {poot.name = "x"}, %w: tensor<64x96xf32> {poot.name = "w"})
    -> (tensor<2x3x96xf32> {poot.name = "y"}) {
  %y = poot.matmul %x, %w : (tensor<2x3x64xf32>, tensor<64x96xf32>) -> tensor<2x3x96xf32>
  return %y : tensor<2x3x96xf32>
}
"""


def _detect(env: dict[str, str]) -> dict:
    code = "import json; from poot_mlir.compiler import devices; print(json.dumps(devices.detect_cpu().to_json()))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_cpu_description_is_detected_and_overridable() -> None:
    d = devices.CPU
    assert d.target == "cpu" and d.compute_units == len(os.sched_getaffinity(0))
    assert d.vector_width in (4, 8, 16) and d.workgroup_memory >= 4096
    flags = open("/proc/cpuinfo").read()
    assert d.vector_width == (16 if "avx512f" in flags else 8 if "avx2" in flags else d.vector_width)
    forced = _detect({"POOT_CPU_CORES": "7", "POOT_CPU_VECTOR_WIDTH": "4"})
    assert forced["compute_units"] == 7 and forced["vector_width"] == 4
    with pytest.raises(subprocess.CalledProcessError):
        _detect({"POOT_CPU_CORES": "many"})


def test_serial_and_openmp_builds_agree(rng, tmp_path) -> None:
    """The vectorized matmul (a linear layer over batch rows) as serial code
    and on OpenMP at 1 and 2 threads: the oracle's numbers each time."""
    require("openmp")
    inputs = {"x": rng.standard_normal((2, 3, 64), dtype=np.float32),
              "w": rng.standard_normal((64, 96), dtype=np.float32)}
    ref = oracle.run(LINEAR, inputs, reference=True).outputs[0]
    device = devices.CPU.with_limits(compute_units=2)
    for mode in ("serial", "omp"):
        path = compile_cpu(LINEAR, tmp_path / mode, device=device, parallel=mode)
        for threads in (1, 2):
            art = CpuArtifact(path, threads=threads)
            assert art.manifest["parallel"] == mode
            np.testing.assert_allclose(art.run(inputs).outputs[0], ref, rtol=1e-5, atol=1e-5)


def test_openmp_build_without_runtime_is_refused(tmp_path, monkeypatch) -> None:
    from poot_mlir.compiler import cpu

    monkeypatch.setenv("POOT_OPENMP", "none")
    monkeypatch.setattr(cpu, "_WARNED_NO_OPENMP", False)  # warned once per process
    with pytest.raises(errors.CompileError, match="OpenMP runtime"):
        compile_cpu(LINEAR, tmp_path / "a", parallel="omp")
    # The default build on a multi-core host falls back to serial code.
    with pytest.warns(RuntimeWarning, match="libomp") if devices.CPU.compute_units > 1 else _nothing():
        path = compile_cpu(LINEAR, tmp_path / "b", device=devices.CPU.with_limits(compute_units=2))
    assert json.loads((path / "manifest.json").read_text())["parallel"] == "serial"


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_artifacts_are_cached_by_module_hash(rng, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("POOT_CACHE_DIR", str(tmp_path / "cache"))
    first = compile_cpu(LINEAR, tmp_path / "a")
    entries = list((tmp_path / "cache" / "cpu").iterdir())
    assert len(entries) == 1
    second = compile_cpu(LINEAR, tmp_path / "b")
    assert (second / "step.so").read_bytes() == (first / "step.so").read_bytes()
    # The manifest says which was a cache hit (a caller timing the compile).
    hit = json.loads((second / "manifest.json").read_text())
    assert hit["from_cache"] is True and "from_cache" not in json.loads((first / "manifest.json").read_text())
    assert len(list((tmp_path / "cache" / "cpu").iterdir())) == 1
    # Another device description (the seed schedules) is another artifact.
    compile_cpu(LINEAR, tmp_path / "c", device=devices.CPU_SEED)
    assert len(list((tmp_path / "cache" / "cpu").iterdir())) == 2
    inputs = {"x": rng.standard_normal((2, 3, 64), dtype=np.float32),
              "w": rng.standard_normal((64, 96), dtype=np.float32)}
    ref = oracle.run(LINEAR, inputs, reference=True).outputs[0]
    np.testing.assert_allclose(CpuArtifact(second).run(inputs).outputs[0], ref, rtol=1e-5, atol=1e-5)
    monkeypatch.setenv("POOT_CACHE", "0")
    compile_cpu(LINEAR, tmp_path / "d", device=devices.CPU.with_limits(vector_width=4))
    assert len(list((tmp_path / "cache" / "cpu").iterdir())) == 2


def test_manifest_records_host_and_compile_times(tmp_path) -> None:
    path = compile_cpu(LINEAR, tmp_path / "a", device=devices.CPU.with_limits(compute_units=1))
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["parallel"] == "serial"  # one core: no thread pool
    assert manifest["cpu"]["name"] and manifest["device"]["vector_width"] == devices.CPU.vector_width
    assert set(manifest["compile_seconds"]) == {"pipeline", "object", "link"}

"""A damaged artifact directory is a typed error (issue 28): loading a CPU or
a whole-step GPU artifact whose manifest is missing, empty, truncated, not
JSON or missing a field, or whose listed files are missing or not what they
claim, raises `errors.ArtifactError` naming the path and what is wrong --
never a bare JSONDecodeError, KeyError or FileNotFoundError -- before any
library is loaded or device opened. A damaged entry of the compile cache is
compiled again, not copied out.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import pytest

from poot_mlir import errors
from poot_mlir.compiler import compile_cpu, compile_gpu, devices
from poot_mlir.frontend import Tracer, ops
from poot_mlir.runtime import cpu as cpu_runtime
from poot_mlir.runtime.program import ProgramArtifact


def small_module():
    tr = Tracer("step")
    x = tr.input("x", (2, 3), "f32")
    tr.output("y", ops.tanh(ops.add(x, x)))
    return tr.finish()


@pytest.fixture(scope="module")
def cpu_artifact(tmp_path_factory) -> Path:
    return compile_cpu(small_module(), tmp_path_factory.mktemp("artifact_cpu") / "step")


@pytest.fixture(scope="module")
def gpu_artifact(tmp_path_factory) -> Path:
    # Compiling needs no device; every refusal below comes before one is opened.
    return compile_gpu(
        small_module(), devices.VULKAN_LAVAPIPE, tmp_path_factory.mktemp("artifact_gpu") / "step"
    )


def _edit_manifest(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(directory: Path) -> None:
        path = directory / "manifest.json"
        manifest = json.loads(path.read_text())
        change(manifest)
        path.write_text(json.dumps(manifest))

    return edit


def _write(name: str, data: "str | bytes") -> Callable[[Path], None]:
    def write(directory: Path) -> None:
        path = directory / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode())

    return write


def _truncate(directory: Path) -> None:
    path = directory / "manifest.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


def _remove(name: str) -> Callable[[Path], None]:
    return lambda directory: (directory / name).unlink()


def _remove_directory(directory: Path) -> None:
    shutil.rmtree(directory)


# (damage, the file the error names, a phrase of its message)
COMMON = [
    ("no directory", _remove_directory, "", "no such directory"),
    ("no manifest", _remove("manifest.json"), "manifest.json", "no such file"),
    ("empty manifest", _write("manifest.json", ""), "manifest.json", "empty"),
    ("truncated manifest", _truncate, "manifest.json", "not valid JSON (truncated?)"),
    ("not JSON", _write("manifest.json", "{format: poot}"), "manifest.json", "not valid JSON"),
    ("not UTF-8", _write("manifest.json", b"\xff\xfe{}"), "manifest.json", "cannot read"),
    ("a JSON list", _write("manifest.json", "[1, 2]"), "manifest.json", "not an object"),
    ("no function", _edit_manifest(lambda m: m.pop("function")), "manifest.json", "no 'function'"),
    (
        "function without inputs",
        _edit_manifest(lambda m: m["function"].pop("inputs")),
        "manifest.json",
        "signature is malformed",
    ),
    (
        "a shape that is not a list",
        _edit_manifest(lambda m: m["function"]["inputs"][0].update(shape=7)),
        "manifest.json",
        "signature is malformed",
    ),
]

CPU_ONLY = [
    ("no library field", _edit_manifest(lambda m: m.pop("library")), "manifest.json", "'library'"),
    ("library missing", _remove("step.so"), "step.so", "step.so is missing"),
    ("library not a library", _write("step.so", b"not an ELF file"), "step.so", "cannot load"),
    (
        "entry not exported",
        _edit_manifest(lambda m: m.update(entry="_mlir_ciface_nothing")),
        "step.so",
        "does not export _mlir_ciface_nothing",
    ),
]


def _first_kernel(directory: Path) -> str:
    manifest = json.loads((directory / "manifest.json").read_text())
    for program in manifest["programs"].values():
        for command in program["commands"]:
            if "launch" in command:
                return command["launch"]["kernel"]
    raise AssertionError("no launch in the artifact")


def _remove_first_kernel(directory: Path) -> None:
    (directory / _first_kernel(directory)).unlink()


def _drop_launch_entry(manifest: dict) -> None:
    for program in manifest["programs"].values():
        for command in program["commands"]:
            if "launch" in command:
                command["launch"].pop("entry")
                return


GPU_ONLY = [
    ("no programs", _edit_manifest(lambda m: m.pop("programs")), "manifest.json", "'programs'"),
    (
        "a program without commands",
        _edit_manifest(lambda m: [p.pop("commands") for p in m["programs"].values()]),
        "manifest.json",
        "no 'commands' list",
    ),
    ("a launch without its entry", _edit_manifest(_drop_launch_entry), "manifest.json", "'entry'"),
    ("a kernel missing", _remove_first_kernel, "<kernel>", "is missing (the kernel of launch"),
]


def _damaged(source: Path, tmp_path: Path, damage: Callable[[Path], None]) -> Path:
    directory = tmp_path / "damaged"
    shutil.copytree(source, directory)
    damage(directory)
    return directory


def _check(error: errors.ArtifactError, directory: Path, named: str, phrase: str) -> None:
    """The message has `phrase` and the path at fault, which is also `.path`."""
    message = str(error)
    assert phrase in message, message
    expected = directory / named if named else directory
    assert str(expected) in message, message
    assert error.path == str(expected)


@pytest.mark.parametrize(
    "damage, named, phrase", [c[1:] for c in COMMON + CPU_ONLY], ids=[c[0] for c in COMMON + CPU_ONLY]
)
def test_a_damaged_cpu_artifact_is_an_artifact_error(cpu_artifact, tmp_path, damage, named, phrase) -> None:
    directory = _damaged(cpu_artifact, tmp_path, damage)
    with pytest.raises(errors.ArtifactError) as caught:
        cpu_runtime.load(directory)
    _check(caught.value, directory, named, phrase)
    # The name it always had in the CPU runtime is the same type.
    assert cpu_runtime.ArtifactError is errors.ArtifactError


@pytest.mark.parametrize(
    "damage, named, phrase", [c[1:] for c in COMMON + GPU_ONLY], ids=[c[0] for c in COMMON + GPU_ONLY]
)
def test_a_damaged_gpu_artifact_is_an_artifact_error(gpu_artifact, tmp_path, damage, named, phrase) -> None:
    directory = _damaged(gpu_artifact, tmp_path, damage)
    with pytest.raises(errors.ArtifactError) as caught:
        ProgramArtifact(directory, backend="vulkan")
    if named == "<kernel>":
        named = _first_kernel(gpu_artifact)
    _check(caught.value, directory, named, phrase)


def test_an_undamaged_artifact_still_loads(cpu_artifact) -> None:
    with cpu_runtime.load(cpu_artifact) as art:
        assert [p.key for p in art.signature.args] == ["x"]


def test_a_damaged_cache_entry_is_compiled_again(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("POOT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("POOT_CACHE", raising=False)
    module = str(small_module())
    compile_cpu(module, tmp_path / "first")
    (entry,) = (tmp_path / "cache" / "cpu").iterdir()
    _truncate(entry)
    out = compile_cpu(module, tmp_path / "second")  # no JSONDecodeError: a miss
    assert cpu_runtime.load(out).signature.args[0].key == "x"
    json.loads((entry / "manifest.json").read_text())  # and the entry was replaced

"""Reading an artifact directory's manifest, every runtime the same way.

An artifact is a directory: `manifest.json` and the files it lists (the CPU's
`step.so`, a GPU program's kernels). Whatever is wrong with it -- no
manifest, a manifest that is truncated or not JSON, a field missing or of the
wrong kind, a listed file missing -- is an `errors.ArtifactError` naming the
path and what is wrong, raised before anything is loaded or run (never a bare
JSONDecodeError, KeyError or FileNotFoundError from deep inside a loader).
Imports no MLIR.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ..errors import ArtifactError
from . import binding

MANIFEST = "manifest.json"


def read_manifest(directory: Path, what: str) -> dict[str, Any]:
    """The parsed manifest of the artifact directory `directory`; `what` says
    which kind of artifact the caller loads ("a CPU artifact")."""
    path = directory / MANIFEST
    if not directory.is_dir():
        raise ArtifactError(f"{directory}: no such directory (expected {what})", str(directory))
    if not path.is_file():
        raise ArtifactError(
            f"{path}: no such file (not an artifact directory; expected {what})", str(path)
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"{path}: cannot read the manifest: {exc}", str(path)) from None
    if not text.strip():
        raise ArtifactError(f"{path}: the manifest is empty (truncated?)", str(path))
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        # A manifest is one JSON object: text that does not end like one was
        # cut short (a full disk, an interrupted copy), the common case.
        stripped = text.rstrip()
        cut = " (truncated?)" if exc.pos >= len(stripped) or not stripped.endswith("}") else ""
        raise ArtifactError(
            f"{path}: the manifest is not valid JSON{cut}: {exc.msg} (line {exc.lineno}, "
            f"column {exc.colno})",
            str(path),
        ) from None
    if not isinstance(manifest, dict):
        raise ArtifactError(
            f"{path}: the manifest is a JSON {type(manifest).__name__}, not an object", str(path)
        )
    return manifest


def manifest_field(manifest: Mapping[str, Any], key: str, kind: type, path: Path) -> Any:
    """`manifest[key]`, which must be there and be a `kind`."""
    if key not in manifest:
        raise ArtifactError(f"{path}: the manifest has no {key!r} field", str(path))
    value = manifest[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ArtifactError(
            f"{path}: the manifest's {key!r} is {type(value).__name__} {value!r:.60}, "
            f"expected {kind.__name__}",
            str(path),
        )
    return value


def manifest_signature(manifest: Mapping[str, Any], path: Path) -> binding.Signature:
    """The step's signature from the manifest's `function`."""
    function = manifest_field(manifest, "function", dict, path)
    try:
        return binding.Signature.from_json(function)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        detail = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ArtifactError(
            f"{path}: the manifest's function signature is malformed ({detail})", str(path)
        ) from None


def listed_file(directory: Path, name: Any, what: str, manifest_path: Path) -> Path:
    """The file `name` the manifest lists (as `what`), which must exist."""
    if not isinstance(name, str) or not name:
        raise ArtifactError(f"{manifest_path}: {what} is {name!r}, not a file name", str(manifest_path))
    path = directory / name
    if not path.is_file():
        raise ArtifactError(f"{path} is missing ({what} listed in {manifest_path})", str(path))
    return path

"""poot_mlir: an MLIR compiler for transformer attention and KV caches.

Subpackages: `ir`, `passmanager`, `dialects` (MLIR bindings under this
package's own prefix), `frontend` (the tracer), `oracle` (numpy reference),
`compiler` (pipelines), `runtime` (artifact runners that import no MLIR).
"""

#: The package version (pyproject.toml reads it from here).
__version__ = "0.1.0"

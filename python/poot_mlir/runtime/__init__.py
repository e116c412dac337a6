"""poot_mlir.runtime."""

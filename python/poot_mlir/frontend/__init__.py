"""poot_mlir.frontend."""

"""poot_mlir.oracle."""

"""poot_mlir.examples."""

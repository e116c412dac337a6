"""poot_mlir.compiler."""

//===- PootDialect.td - everything in the poot dialect -----*- tablegen -*-===//
// The single entry point for TableGen backends and the Python bindings.
#ifndef POOT_DIALECT_TD
#define POOT_DIALECT_TD
include "dialect/PootBase.td"
include "dialect/PootAttrs.td"
include "dialect/PootOps.td"
include "dialect/PootAttentionOps.td"
#endif // POOT_DIALECT_TD

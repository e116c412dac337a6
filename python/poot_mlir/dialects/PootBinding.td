//===- PootBinding.td - Python binding entry point ---------*- tablegen -*-===//
#ifndef POOT_PYTHON_BINDING_TD
#define POOT_PYTHON_BINDING_TD
include "dialect/PootDialect.td"
#endif

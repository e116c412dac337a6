"""The poot dialect: generated op builders plus attribute helpers."""

from ._poot_ops_gen import *  # noqa: F401,F403
from ._poot_enum_gen import *  # noqa: F401,F403
from .._mlir_libs._site_initialize_0 import register_dialects  # noqa: F401

from ..ir import Attribute, IntegerAttr, IntegerType, register_attribute_builder


@register_attribute_builder("Poot_SignedI64Attr")
def _signed_i64_attr(value: int, context=None) -> IntegerAttr:
    """Builder for index_guard's signed bounds (min may be negative)."""
    return IntegerAttr.get(IntegerType.get_signless(64, context=context), int(value))


def slot_attr(kind: str, name: str | None = None) -> Attribute:
    """`#poot.slot<kind>` or `#poot.slot<state "name">` (needs a Context)."""
    if name is not None:
        return Attribute.parse(f'#poot.slot<{kind} "{name}">')
    return Attribute.parse(f"#poot.slot<{kind}>")


def range_attr(lo: int, hi: int) -> Attribute:
    """`#poot.range<lo, hi>`, an inclusive declared value range."""
    return Attribute.parse(f"#poot.range<{int(lo)}, {int(hi)}>")

"""Reflection of SPIR-V compute modules, in pure Python.

The runtime reads a kernel's entry points, workgroup size, descriptor
bindings, workgroup-memory footprint and capabilities from the binary itself,
so it can refuse a kernel with a message that names the rule *before* handing
it to a driver (drivers tend to crash, or silently miscompute, on a module
that asks for more than the device has).

Only what a compute kernel of our ABI needs is decoded; everything else is
skipped word-wise. No MLIR and no Vulkan are needed here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

MAGIC = 0x07230203

# Opcodes (SPIR-V spec, section 3.52).
_OP_EXTENSION = 10
_OP_MEMORY_MODEL = 14
_OP_ENTRY_POINT = 15
_OP_EXECUTION_MODE = 16
_OP_CAPABILITY = 17
_OP_TYPE_BOOL = 20
_OP_TYPE_INT = 21
_OP_TYPE_FLOAT = 22
_OP_TYPE_VECTOR = 23
_OP_TYPE_MATRIX = 24
_OP_TYPE_ARRAY = 28
_OP_TYPE_RUNTIME_ARRAY = 29
_OP_TYPE_STRUCT = 30
_OP_TYPE_POINTER = 32
_OP_CONSTANT = 43
_OP_SPEC_CONSTANT = 50
_OP_FUNCTION = 54
_OP_FUNCTION_END = 56
_OP_FUNCTION_CALL = 57
_OP_VARIABLE = 59
_OP_LOAD = 61
_OP_STORE = 62
_OP_COPY_MEMORY = 63
_OP_ACCESS_CHAIN = 65
_OP_IN_BOUNDS_ACCESS_CHAIN = 66
_OP_PTR_ACCESS_CHAIN = 67
_OP_ARRAY_LENGTH = 68
_OP_DECORATE = 71
_OP_COPY_OBJECT = 83
_OP_ATOMIC_LOAD = 227
_OP_ATOMIC_STORE = 228
_OP_ATOMIC_XOR = 242
_OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70
_OP_EXECUTION_MODE_ID = 331

# Operand values.
_EXEC_MODEL_GLCOMPUTE = 5
_EXEC_MODEL_KERNEL = 6
_MODE_LOCAL_SIZE = 17
_MODE_LOCAL_SIZE_ID = 38
_DEC_BUILTIN = 11
_DEC_BINDING = 33
_DEC_DESCRIPTOR_SET = 34
_DEC_BLOCK = 2
_DEC_BUFFER_BLOCK = 3
_BUILTIN_WORKGROUP_SIZE = 25

STORAGE_CLASS_NAMES = {
    0: "UniformConstant",
    1: "Input",
    2: "Uniform",
    3: "Output",
    4: "Workgroup",
    5: "CrossWorkgroup",
    6: "Private",
    7: "Function",
    9: "PushConstant",
    12: "StorageBuffer",
}
_SC_UNIFORM = 2
_SC_WORKGROUP = 4
_SC_STORAGE_BUFFER = 12

#: Capability number -> name, for the capabilities a device may lack.
CAPABILITY_NAMES = {
    1: "Shader",
    9: "Float16",
    10: "Float64",
    11: "Int64",
    12: "Int64Atomics",
    22: "Int16",
    39: "Int8",
    61: "GroupNonUniform",
    62: "GroupNonUniformVote",
    63: "GroupNonUniformArithmetic",
    64: "GroupNonUniformBallot",
    65: "GroupNonUniformShuffle",
    66: "GroupNonUniformShuffleRelative",
    67: "GroupNonUniformClustered",
    68: "GroupNonUniformQuad",
    4433: "StorageBuffer16BitAccess",
    4434: "UniformAndStorageBuffer16BitAccess",
    4435: "StoragePushConstant16",
    4441: "VariablePointersStorageBuffer",
    4442: "VariablePointers",
    4448: "StorageBuffer8BitAccess",
    4449: "UniformAndStorageBuffer8BitAccess",
    4450: "StoragePushConstant8",
}


class SpirvError(ValueError):
    """The bytes are not a SPIR-V module this reflection can read."""


@dataclass(frozen=True)
class Binding:
    """One descriptor a kernel declares."""

    set: int
    binding: int
    storage_class: str  # "StorageBuffer" (our ABI) or "Uniform"
    is_buffer_block: bool  # Uniform + BufferBlock: the pre-1.3 storage buffer

    @property
    def is_storage_buffer(self) -> bool:
        return self.storage_class == "StorageBuffer" or self.is_buffer_block


@dataclass(frozen=True)
class EntryPoint:
    """What one compute entry point of a module needs from a device."""

    name: str
    execution_model: int
    local_size: tuple[int, int, int] | None  # None when spec-constant sized
    bindings: tuple[Binding, ...]  # those the entry point statically uses
    workgroup_memory_bytes: int  # sum of its Workgroup variables' sizes


@dataclass(frozen=True)
class Module:
    version: tuple[int, int]
    capabilities: frozenset[str]
    extensions: tuple[str, ...]
    entry_points: dict[str, EntryPoint] = field(default_factory=dict)

    def entry(self, name: str) -> EntryPoint:
        try:
            return self.entry_points[name]
        except KeyError:
            have = ", ".join(sorted(self.entry_points)) or "none"
            raise SpirvError(
                f"SPIR-V module has no entry point {name!r} (it has: {have})"
            ) from None


def _words(data: bytes) -> tuple[int, ...]:
    if len(data) < 20 or len(data) % 4:
        raise SpirvError(
            f"not a SPIR-V binary: {len(data)} bytes (a module is a whole number "
            "of 32-bit words, at least the 5-word header)"
        )
    for fmt in ("<", ">"):
        words = struct.unpack(f"{fmt}{len(data) // 4}I", data)
        if words[0] == MAGIC:
            return words
    raise SpirvError(
        f"not a SPIR-V binary: magic number 0x{struct.unpack('<I', data[:4])[0]:08x}"
        f" != 0x{MAGIC:08x} (was SPIR-V assembly text or MLIR passed instead of "
        "the serialized module?)"
    )


def _string(words: tuple[int, ...], start: int) -> tuple[str, int]:
    """Decode a nul-terminated literal string; return it and the next word index."""
    raw = bytearray()
    i = start
    while i < len(words):
        chunk = struct.pack("<I", words[i])
        i += 1
        nul = chunk.find(b"\0")
        if nul >= 0:
            raw += chunk[:nul]
            break
        raw += chunk
    return raw.decode("utf-8", errors="replace"), i


def reflect(data: bytes | bytearray | memoryview) -> Module:
    """Read the compute-relevant facts of a SPIR-V binary."""
    words = _words(bytes(data))
    version = ((words[1] >> 16) & 0xFF, (words[1] >> 8) & 0xFF)

    caps: set[str] = set()
    exts: list[str] = []
    entries: list[tuple[int, int, str]] = []  # (model, func id, name)
    local_size: dict[int, tuple[int, int, int]] = {}
    local_size_id: dict[int, tuple[int, int, int]] = {}
    decorations: dict[int, dict[int, list[int]]] = {}
    types: dict[int, tuple] = {}
    constants: dict[int, int] = {}
    variables: dict[int, tuple[int, int]] = {}  # id -> (pointer type, storage class)
    # Per function: ids of globals it touches and functions it calls.
    func_refs: dict[int, set[int]] = {}
    func_calls: dict[int, set[int]] = {}
    current: int | None = None

    i = 5
    n = len(words)
    while i < n:
        count = words[i] >> 16
        op = words[i] & 0xFFFF
        if count == 0 or i + count > n:
            raise SpirvError(f"malformed SPIR-V: bad instruction length at word {i}")
        ops = words[i + 1 : i + count]
        i += count

        if op == _OP_CAPABILITY:
            caps.add(CAPABILITY_NAMES.get(ops[0], f"Capability{ops[0]}"))
        elif op == _OP_EXTENSION:
            exts.append(_string(ops, 0)[0])
        elif op == _OP_ENTRY_POINT:
            name, _ = _string(ops, 2)
            entries.append((ops[0], ops[1], name))
        elif op == _OP_EXECUTION_MODE and ops[1] == _MODE_LOCAL_SIZE:
            local_size[ops[0]] = (ops[2], ops[3], ops[4])
        elif op == _OP_EXECUTION_MODE_ID and ops[1] == _MODE_LOCAL_SIZE_ID:
            local_size_id[ops[0]] = (ops[2], ops[3], ops[4])
        elif op == _OP_DECORATE:
            decorations.setdefault(ops[0], {})[ops[1]] = list(ops[2:])
        elif op == _OP_TYPE_BOOL:
            types[ops[0]] = ("bool",)
        elif op in (_OP_TYPE_INT, _OP_TYPE_FLOAT):
            types[ops[0]] = ("scalar", ops[1])
        elif op in (_OP_TYPE_VECTOR, _OP_TYPE_MATRIX):
            types[ops[0]] = ("vector", ops[1], ops[2])
        elif op == _OP_TYPE_ARRAY:
            types[ops[0]] = ("array", ops[1], ops[2])
        elif op == _OP_TYPE_RUNTIME_ARRAY:
            types[ops[0]] = ("runtime_array", ops[1])
        elif op == _OP_TYPE_STRUCT:
            types[ops[0]] = ("struct", tuple(ops[1:]))
        elif op == _OP_TYPE_POINTER:
            types[ops[0]] = ("pointer", ops[1], ops[2])
        elif op in (_OP_CONSTANT, _OP_SPEC_CONSTANT) and len(ops) >= 3:
            constants[ops[1]] = ops[2]  # low word is enough for sizes
        elif op == _OP_VARIABLE:
            if current is None:
                variables[ops[1]] = (ops[0], ops[2])
        elif op == _OP_FUNCTION:
            current = ops[1]
            func_refs[current] = set()
            func_calls[current] = set()
        elif op == _OP_FUNCTION_END:
            current = None
        elif current is not None:
            # Only operand positions that are always ids: a literal (an index,
            # a memory-operand mask) must never be mistaken for a variable.
            refs = func_refs[current]
            if op == _OP_FUNCTION_CALL:
                func_calls[current].add(ops[2])
                refs.update(ops[3:])
            elif op in (
                _OP_LOAD,
                _OP_ACCESS_CHAIN,
                _OP_IN_BOUNDS_ACCESS_CHAIN,
                _OP_PTR_ACCESS_CHAIN,
                _OP_IN_BOUNDS_PTR_ACCESS_CHAIN,
                _OP_ARRAY_LENGTH,
                _OP_COPY_OBJECT,
            ) or (_OP_ATOMIC_LOAD <= op <= _OP_ATOMIC_XOR and op != _OP_ATOMIC_STORE):
                refs.add(ops[2])
            elif op in (_OP_STORE, _OP_ATOMIC_STORE):
                refs.add(ops[0])
            elif op == _OP_COPY_MEMORY:
                refs.update(ops[0:2])
            elif op > 5000:  # vendor atomics (OpAtomicFAddEXT, ...) and friends
                refs.update(ops[2:3])

    def size_of(type_id: int, depth: int = 0) -> int:
        t = types.get(type_id)
        if t is None or depth > 32:
            return 0
        kind = t[0]
        if kind == "bool":
            return 4
        if kind == "scalar":
            return t[1] // 8
        if kind == "vector":
            return size_of(t[1], depth + 1) * t[2]
        if kind == "array":
            return size_of(t[1], depth + 1) * constants.get(t[2], 0)
        if kind == "struct":
            return sum(size_of(m, depth + 1) for m in t[1])
        return 0

    # A WorkgroupSize builtin constant overrides LocalSize (SPIR-V spec).
    wg_builtin = any(
        d.get(_DEC_BUILTIN, [None])[0] == _BUILTIN_WORKGROUP_SIZE for d in decorations.values()
    )

    def reachable_globals(func: int) -> set[int]:
        seen: set[int] = set()
        todo = [func]
        refs: set[int] = set()
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            refs |= func_refs.get(f, set())
            todo.extend(func_calls.get(f, ()))
        return refs & variables.keys()

    single = len(entries) == 1
    result: dict[str, EntryPoint] = {}
    for model, func, name in entries:
        # With one entry point every global belongs to it; this also covers
        # instruction forms the use scan above does not know.
        used = set(variables) if single else reachable_globals(func)
        bindings = []
        wg_bytes = 0
        for var in sorted(used):
            ptr_type, sc = variables[var]
            dec = decorations.get(var, {})
            if sc == _SC_WORKGROUP:
                pointee = types.get(ptr_type, ("pointer", sc, 0))[2]
                wg_bytes += size_of(pointee)
            if _DEC_BINDING in dec:
                pointee = types.get(ptr_type, ("pointer", sc, 0))[2]
                buffer_block = _DEC_BUFFER_BLOCK in decorations.get(pointee, {})
                bindings.append(
                    Binding(
                        set=dec.get(_DEC_DESCRIPTOR_SET, [0])[0],
                        binding=dec[_DEC_BINDING][0],
                        storage_class=STORAGE_CLASS_NAMES.get(sc, str(sc)),
                        is_buffer_block=sc == _SC_UNIFORM and buffer_block,
                    )
                )
        size: tuple[int, int, int] | None = local_size.get(func)
        if size is None and func in local_size_id:
            ids = local_size_id[func]
            if all(x in constants for x in ids):
                size = (constants[ids[0]], constants[ids[1]], constants[ids[2]])
        if wg_builtin:
            size = None  # sized by a (possibly specialized) constant
        result[name] = EntryPoint(
            name=name,
            execution_model=model,
            local_size=size,
            bindings=tuple(sorted(bindings, key=lambda b: (b.set, b.binding))),
            workgroup_memory_bytes=wg_bytes,
        )

    return Module(
        version=version,
        capabilities=frozenset(caps),
        extensions=tuple(exts),
        entry_points=result,
    )

"""Host tensors from other libraries (torch, JAX, CuPy's pinned memory, ...)
as numpy arrays over the same memory, through DLPack.

`host_array(value)` is what the binder calls for anything that is not a
numpy array: `np.from_dlpack` for every dtype numpy knows, and for bfloat16
(which numpy's DLPack import refuses) a view built here from the DLPack
capsule with `ml_dtypes.bfloat16`. Neither copies; the array keeps the
producer's tensor alive. A torch tensor that requires grad (a parameter) is
read through `.detach()`, the same memory.

Outputs go the other way without help: they are numpy arrays, which export
DLPack themselves (`torch.from_dlpack(result.outputs[0])` shares the memory).
A bfloat16 result (ml_dtypes) is not exportable by numpy; view its bits:
`torch.from_dlpack(out.view(np.int16)).view(torch.bfloat16)`.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

#: DLPack device types whose memory the host can read.
_HOST_DEVICES = {1: "cpu", 3: "cuda_host", 11: "rocm_host", 13: "cuda_managed"}
_DEVICE_NAMES = {2: "cuda", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm", 14: "oneapi"}
_BFLOAT = 4  # kDLBfloat


class NotHostMemory(ValueError):
    """The tensor lives in device memory a host runtime cannot read."""


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_rename = ctypes.pythonapi.PyCapsule_SetName
_capsule_rename.restype = ctypes.c_int
_capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _Owner:
    """Holds a consumed DLPack tensor; its deleter runs when the last numpy
    view of it goes away."""

    def __init__(self, managed: "ctypes._Pointer[_DLManagedTensor]") -> None:
        self._managed = managed

    def __del__(self) -> None:
        deleter = self._managed.contents.deleter
        if deleter:
            deleter(self._managed)


def _bfloat16_view(value: Any) -> np.ndarray:
    """A bfloat16 DLPack tensor as an ml_dtypes.bfloat16 array, no copy."""
    import ml_dtypes

    capsule = value.__dlpack__()
    address = _capsule_pointer(capsule, b"dltensor")
    managed = ctypes.cast(address, ctypes.POINTER(_DLManagedTensor))
    # From here on we own the tensor: the capsule must not free it.
    _capsule_rename(capsule, b"used_dltensor")
    owner = _Owner(managed)
    tensor = managed.contents.dl_tensor
    if tensor.dtype.code != _BFLOAT or tensor.dtype.bits != 16 or tensor.dtype.lanes != 1:
        raise TypeError("not a bfloat16 tensor")
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    itemsize = 2
    if tensor.strides:
        strides = tuple(tensor.strides[i] * itemsize for i in range(tensor.ndim))
    else:  # NULL strides: compact row-major
        strides, step = [], itemsize
        for dim in reversed(shape):
            strides.insert(0, step)
            step *= dim
        strides = tuple(strides)
    count = 1
    for dim in shape:
        count *= dim
    if count == 0:
        return np.empty(shape, ml_dtypes.bfloat16)
    # The span the strided view touches, from its lowest to highest byte.
    low = sum(min(0, (d - 1) * s) for d, s in zip(shape, strides))
    high = sum(max(0, (d - 1) * s) for d, s in zip(shape, strides)) + itemsize
    start = (tensor.data or 0) + tensor.byte_offset + low
    raw = (ctypes.c_char * (high - low)).from_address(start)
    raw._poot_owner = owner  # the buffer keeps the tensor alive
    # Element (0, ..., 0) sits -low bytes into the span.
    origin = np.frombuffer(raw, dtype=np.uint8)[-low:].view(ml_dtypes.bfloat16)
    return np.lib.stride_tricks.as_strided(origin, shape=shape, strides=strides, writeable=False)


def is_dlpack(value: Any) -> bool:
    """Whether `value` exports DLPack (torch, JAX, CuPy, numpy, ...)."""
    return hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__")


def readable(value: Any) -> Any:
    """`value`, or for a torch tensor that requires grad (a parameter, or
    anything computed from one) its `.detach()`: the same memory, which
    torch refuses to export (a raw BufferError) while autograd tracks it.
    The runtimes only read it, so the gradient graph is untouched."""
    if getattr(value, "requires_grad", False) is True and callable(getattr(value, "detach", None)):
        return value.detach()
    return value


def host_array(value: Any) -> np.ndarray:
    """A numpy array over `value`'s memory (no copy); `value` must export
    DLPack and live in host-readable memory, else NotHostMemory. A torch
    tensor that requires grad is read through `.detach()` (`readable`)."""
    value = readable(value)
    device_type, device_id = (int(x) for x in value.__dlpack_device__())
    if device_type not in _HOST_DEVICES:
        name = _DEVICE_NAMES.get(device_type, f"DLPack device type {device_type}")
        raise NotHostMemory(
            f"a tensor in {name}:{device_id} memory; this runtime reads host memory "
            "(copy it to the host first, e.g. torch's .cpu())"
        )
    try:
        return np.from_dlpack(value)
    except (BufferError, RuntimeError, TypeError) as error:
        # numpy refuses bfloat16 (and only knows its own dtypes).
        try:
            return _bfloat16_view(value)
        except TypeError:
            raise error from None

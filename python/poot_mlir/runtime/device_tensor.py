"""A result left in device memory, exported without a copy.

`Session.step(inputs, device_outputs=True)` on the CUDA backend returns its
outputs as `DeviceTensor`s: the session's own result buffers, seen through
`__cuda_array_interface__` (CuPy, Numba, `torch.as_tensor(t, device="cuda")`)
and DLPack (`torch.from_dlpack(t)`, `cupy.from_dlpack(t)`). No byte leaves
the device. Like the static outputs of a CUDA graph, a DeviceTensor shows
the buffer as the *next* step leaves it: copy it (`torch.from_dlpack(t).clone()`)
to keep a value across steps. `numpy()` reads it back.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

import numpy as np

from . import dlpack

#: DLPack type codes (dlpack.h: kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool).
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}
_KDL_CUDA = 2

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

#: Exported tensors not yet released by their consumer, by address (the
#: consumer calls the deleter; until then the struct must stay alive).
_LIVE: dict[int, tuple[Any, ...]] = {}


def _release(managed: "ctypes._Pointer[dlpack._DLManagedTensor]") -> None:
    _LIVE.pop(ctypes.addressof(managed.contents), None)


_RELEASE = dlpack._DELETER(_release)


def _dl_dtype(dtype: np.dtype) -> dlpack._DLDataType:
    if dtype.name == "bfloat16":
        return dlpack._DLDataType(4, 16, 1)
    if dtype.kind not in _CODES:
        raise TypeError(f"no DLPack type for {dtype}")
    return dlpack._DLDataType(_CODES[dtype.kind], dtype.itemsize * 8, 1)


class DeviceTensor:
    """`shape` elements of `dtype` at device address `ptr` (CUDA device
    `device_id`); `owner` keeps the memory alive; `read` copies it to the
    host (`read(dtype, shape)`)."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: np.dtype, device_id: int,
                 owner: Any, read: Callable[[np.dtype, tuple[int, ...]], np.ndarray]) -> None:
        self.ptr = int(ptr)
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.device_id = int(device_id)
        self._owner = owner
        self._read = read

    def __repr__(self) -> str:
        return f"DeviceTensor(cuda:{self.device_id}, shape={self.shape}, dtype={self.dtype})"

    def numpy(self) -> np.ndarray:
        """The values, copied to the host."""
        return self._read(self.dtype, self.shape)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
            # step() synchronized its stream before returning: no stream to wait on.
            "stream": None,
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CUDA, self.device_id)

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """A legacy (unversioned) DLPack capsule over the buffer. The data is
        ready on every stream: step() synchronized before returning."""
        if copy:
            raise BufferError("DeviceTensor exports its buffer without a copy only")
        shape = (ctypes.c_int64 * max(len(self.shape), 1))(*self.shape)
        managed = dlpack._DLManagedTensor()
        managed.dl_tensor.data = self.ptr
        managed.dl_tensor.device = dlpack._DLDevice(_KDL_CUDA, self.device_id)
        managed.dl_tensor.ndim = len(self.shape)
        managed.dl_tensor.dtype = _dl_dtype(self.dtype)
        managed.dl_tensor.shape = shape
        managed.dl_tensor.strides = None  # compact row-major
        managed.dl_tensor.byte_offset = 0
        managed.deleter = _RELEASE
        address = ctypes.addressof(managed)
        _LIVE[address] = (managed, shape, self._owner)
        return _capsule_new(address, b"dltensor", None)

"""Storage buffers: device memory that kernels read and write."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import VulkanError

if TYPE_CHECKING:
    from .device import Device


class Buffer:
    """A storage buffer on a device; made by `Device.buffer_from`, `empty`,
    `zeros` or `scalar`.

    `read`/`write` copy between host and device: through the mapped memory
    when the device memory is host-visible (lavapipe, integrated GPUs,
    resizable BAR), through a staging buffer otherwise. `dtype`/`shape` are
    remembered from `Device.buffer_from` as `read`'s and `write`'s defaults.
    """

    def __init__(
        self,
        device: Device,
        nbytes: int,
        dtype: Any = None,
        shape: tuple[int, ...] | None = None,
        *,
        host: bool | None = None,
    ) -> None:
        if nbytes < 0:
            raise VulkanError(f"buffer size must be >= 0 bytes, got {nbytes}")
        self._closed = True  # until allocated: __del__ must not free nothing
        self.device = device
        self.nbytes = int(nbytes)
        self.dtype = np.dtype(dtype) if dtype is not None else None
        self.shape = tuple(shape) if shape is not None else None
        # Vulkan forbids size 0; a multiple of 16 also keeps any descriptor
        # range aligned for vector loads.
        self._size = max(16, -(-self.nbytes // 16) * 16)
        self._handle, self._memory, self._host = device._allocate(self._size, host=host)
        self._closed = False
        device._buffers.add(self)

    # -- host access ---------------------------------------------------------

    def write(self, data: Any, *, offset: int = 0) -> None:
        """Copy `data` into the buffer at byte `offset`. A numpy array is
        written as its own dtype's bytes; anything else (a list, a scalar) is
        first converted to the buffer's dtype when it has one."""
        self._check_open()
        if isinstance(data, np.ndarray) or self.dtype is None:
            raw = np.ascontiguousarray(data)
        else:
            raw = np.ascontiguousarray(data, dtype=self.dtype)
        view = raw.reshape(-1).view(np.uint8)
        if offset < 0 or offset + view.nbytes > self.nbytes:
            raise VulkanError(
                f"write of {view.nbytes} bytes at offset {offset} overruns the "
                f"{self.nbytes}-byte buffer"
            )
        if not view.nbytes:
            return
        if self._host is not None:
            self._host[offset : offset + view.nbytes] = view
        else:
            self.device._staged_write(self, view, offset)

    def read(
        self,
        dtype: Any = None,
        shape: Iterable[int] | int | None = None,
        *,
        offset: int = 0,
    ) -> np.ndarray:
        """A copy of the contents as a numpy array.

        `dtype` defaults to the dtype the buffer was made from; `shape` to
        that shape (same dtype, offset 0) or else to all whole elements."""
        self._check_open()
        if dtype is None:
            if self.dtype is None:
                raise VulkanError(
                    "this buffer has no dtype (made by empty/zeros): " "call read(dtype, shape)"
                )
            dtype = self.dtype
        dt = np.dtype(dtype)
        if shape is None:
            if self.shape is not None and dt == self.dtype and offset == 0:
                shape = self.shape
            else:
                shape = ((self.nbytes - offset) // dt.itemsize,)
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        nbytes = math.prod(shape) * dt.itemsize
        if offset < 0 or offset + nbytes > self.nbytes:
            raise VulkanError(
                f"read of {shape} {dt} ({nbytes} bytes) at offset {offset} "
                f"overruns the {self.nbytes}-byte buffer"
            )
        if self._host is not None:
            raw = self._host[offset : offset + nbytes].copy()
        else:
            raw = self.device._staged_read(self, nbytes, offset)
        return raw.view(dt).reshape(shape)

    def fill(self, byte: int = 0) -> None:
        """Set every byte to `byte`."""
        self.write(np.full(self.nbytes, byte, np.uint8))

    # -- lifetime ------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Free the buffer now (idempotent); using it afterwards raises."""
        if self._closed:
            return
        self._closed = True
        self._host = None  # the mapping dies with the memory
        self.device._buffers.discard(self)
        self.device._free(self._handle, self._memory)

    def _check_open(self) -> None:
        if self._closed:
            raise VulkanError("buffer is closed")

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: modules may be half gone
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        meta = f" {self.dtype}{list(self.shape)}" if self.shape is not None else ""
        return f"<vulkan.Buffer {self.nbytes} B{meta} {state}>"


class BufferSlice:
    """Bytes [offset, offset + nbytes) of a Buffer, bound to a kernel as a
    storage buffer of its own (a temporary in a step's arena). `offset`
    must be a multiple of the device's minStorageBufferOffsetAlignment."""

    def __init__(self, buffer: Buffer, offset: int, nbytes: int) -> None:
        if offset < 0 or offset + nbytes > buffer._size:
            raise VulkanError(
                f"slice [{offset}, {offset + nbytes}) is outside the buffer's {buffer._size} bytes"
            )
        self.buffer = buffer
        self.device = buffer.device
        self.offset = int(offset)
        self.nbytes = int(nbytes)
        self._size = max(16, -(-self.nbytes // 16) * 16)
        if self.offset + self._size > buffer._size:
            self._size = self.nbytes
        self._handle = buffer._handle

    @property
    def closed(self) -> bool:
        return self.buffer.closed

    def read(self, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
        return self.buffer.read(dtype, shape, offset=self.offset)

    def write(self, data: Any) -> None:
        self.buffer.write(np.ascontiguousarray(data), offset=self.offset)

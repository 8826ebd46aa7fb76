"""Minimal, dependency-free (numpy + torch) reader and writer of the safetensors format.

Independent of the C++ reader in src/stx/io: written from the public format description.

Layout of a file:
  * 8 bytes: N, the header length, unsigned 64-bit little-endian;
  * N bytes: a UTF-8 JSON object. Each key is a tensor name mapped to
    {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}; offsets are
    relative to the start of the data buffer, end exclusive. The optional key
    "__metadata__" maps to an object of string -> string. Writers may pad the header with
    trailing spaces (the reference writer aligns the data buffer to 8 bytes);
  * the data buffer: every tensor's bytes, row-major (C order), little-endian, no holes.

API:
  load(path)            -> (dict name -> torch.Tensor, metadata dict)
  load_numpy(path)      -> (dict name -> numpy.ndarray, metadata dict)   (no BF16)
  save(path, tensors, metadata=None)   tensors: name -> torch.Tensor or numpy.ndarray
  read_header(path)     -> (header dict without __metadata__, metadata dict, data offset)
"""

import json
import os
import struct

import numpy as np
import torch

# safetensors dtype string -> (numpy dtype, torch dtype, itemsize)
_DTYPES = {
    "F64": (np.dtype("<f8"), torch.float64, 8),
    "F32": (np.dtype("<f4"), torch.float32, 4),
    "F16": (np.dtype("<f2"), torch.float16, 2),
    "BF16": (np.dtype("<u2"), torch.bfloat16, 2),  # raw bits in numpy, reinterpreted in torch
    "I64": (np.dtype("<i8"), torch.int64, 8),
    "I32": (np.dtype("<i4"), torch.int32, 4),
    "I16": (np.dtype("<i2"), torch.int16, 2),
    "I8": (np.dtype("i1"), torch.int8, 1),
    "U8": (np.dtype("u1"), torch.uint8, 1),
    "BOOL": (np.dtype("?"), torch.bool, 1),
}
_TORCH_TO_ST = {v[1]: k for k, v in _DTYPES.items()}
_NUMPY_TO_ST = {
    np.dtype("float64"): "F64", np.dtype("float32"): "F32", np.dtype("float16"): "F16",
    np.dtype("int64"): "I64", np.dtype("int32"): "I32", np.dtype("int16"): "I16",
    np.dtype("int8"): "I8", np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL",
}

_MAX_HEADER = 100 * 1024 * 1024  # the reference implementation's limit


class SafetensorsError(ValueError):
    """A malformed or unsupported safetensors file."""


def read_header(path):
    """Parse and validate the header. Returns (entries, metadata, data_start, data_len)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise SafetensorsError(f"{path}: file shorter than the 8-byte header length")
        (n,) = struct.unpack("<Q", raw)
        if n > _MAX_HEADER or 8 + n > size:
            raise SafetensorsError(f"{path}: header length {n} exceeds the file ({size} bytes)")
        text = f.read(n)
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{path}: header is not valid UTF-8 JSON: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise SafetensorsError(f"{path}: __metadata__ must map strings to strings")
    data_start = 8 + n
    data_len = size - data_start
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"{path}: tensor '{name}': entry must have exactly "
                                   f"dtype, shape, data_offsets")
        if e["dtype"] not in _DTYPES:
            raise SafetensorsError(f"{path}: tensor '{name}': unsupported dtype {e['dtype']!r}")
        shape, off = e["shape"], e["data_offsets"]
        if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
            raise SafetensorsError(f"{path}: tensor '{name}': bad shape {shape!r}")
        if not (isinstance(off, list) and len(off) == 2 and all(isinstance(o, int) for o in off)
                and 0 <= off[0] <= off[1] <= data_len):
            raise SafetensorsError(f"{path}: tensor '{name}': data_offsets {off!r} outside the "
                                   f"{data_len}-byte data buffer")
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if off[1] - off[0] != numel * _DTYPES[e["dtype"]][2]:
            raise SafetensorsError(f"{path}: tensor '{name}': {off[1] - off[0]} bytes for "
                                   f"{e['dtype']} shape {shape}")
        spans.append((off[0], off[1], name))
    spans.sort()
    pos = 0
    for b, end, name in spans:
        if b != pos:
            raise SafetensorsError(f"{path}: tensor '{name}': data buffer has a hole or an "
                                   f"overlap at byte {pos}")
        pos = end
    if pos != data_len:
        raise SafetensorsError(f"{path}: {data_len - pos} trailing bytes after the last tensor")
    return header, metadata, data_start, data_len


def _load_arrays(path):
    header, metadata, start, _ = read_header(path)
    with open(path, "rb") as f:
        f.seek(start)
        buf = f.read()
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        arr = np.frombuffer(buf[b:end], dtype=_DTYPES[e["dtype"]][0])
        out[name] = arr.reshape(e["shape"]).astype(arr.dtype.newbyteorder("="))  # a copy
    return header, out, metadata


def load_numpy(path):
    """Read every tensor as a numpy array (BF16 comes back as raw uint16 bits)."""
    _, arrays, metadata = _load_arrays(path)
    return arrays, metadata


def load(path):
    """Read every tensor as a torch tensor (contiguous, writable, native byte order)."""
    header, arrays, metadata = _load_arrays(path)
    out = {}
    for name, arr in arrays.items():
        if header[name]["dtype"] == "BF16":
            out[name] = torch.from_numpy(arr.view(np.int16)).view(torch.bfloat16)
        else:
            out[name] = torch.from_numpy(arr)
    return out, metadata


def _to_numpy(name, t):
    if isinstance(t, torch.Tensor):
        t = t.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            return "BF16", t.view(torch.int16).numpy().view(np.uint16)
        if t.dtype not in _TORCH_TO_ST:
            raise SafetensorsError(f"tensor '{name}': unsupported torch dtype {t.dtype}")
        return _TORCH_TO_ST[t.dtype], t.numpy()
    a = np.ascontiguousarray(t)
    if a.dtype.newbyteorder("=") not in _NUMPY_TO_ST:
        raise SafetensorsError(f"tensor '{name}': unsupported numpy dtype {a.dtype}")
    return _NUMPY_TO_ST[a.dtype.newbyteorder("=")], a


def save(path, tensors, metadata=None):
    """Write tensors (name -> torch.Tensor | numpy.ndarray) and optional string metadata.

    Written to a temporary name and renamed, so a reader never sees a half-written file. The
    checksums stx stores (stx.crc32c, stx.metadata_crc32c) describe the tensors stx wrote, so a
    writer of other tensors drops them: metadata copied from an stx file loses those two keys.
    """
    header, chunks, pos = {}, [], 0
    metadata = {k: v for k, v in (metadata or {}).items() if k not in ("stx.crc32c", "stx.metadata_crc32c")}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("metadata must map strings to strings")
        header["__metadata__"] = dict(metadata)
    for name in sorted(tensors):
        if name == "__metadata__":
            raise SafetensorsError("'__metadata__' is not a valid tensor name")
        dt, a = _to_numpy(name, tensors[name])
        data = np.ascontiguousarray(a).astype(_DTYPES[dt][0], copy=False).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [pos, pos + len(data)]}
        chunks.append(data)
        pos += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-len(text)) % 8)  # align the data buffer to 8 bytes, as the reference does
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
    os.replace(tmp, path)

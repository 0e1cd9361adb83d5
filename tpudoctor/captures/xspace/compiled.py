"""The compiled decoder's machine code, cached on disk: numba compiles ``jit_wire``'s kernels once per
machine into C-callable functions, and every later process loads their object code with llvmlite
alone (about 50 ms) instead of starting numba (half a second or more: its typing tables, scipy).

``kernels()`` gives the kernels, or None where numba or llvmlite is missing or will not load (the
numpy decoder then does the work). The cache is a file per (kernel source, CPU) in
``$TPUDOCTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/tpudoctor``, else ``~/.cache/tpudoctor``; where none
can be written the kernels still run, compiled anew in each process.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np

CACHE_ENV = "TPUDOCTOR_CACHE_DIR"
OK, TRUNCATED, BAD_WIRE_TYPE, FULL, WIDE = 0, 1, 2, 3, 4  # as in ``jit_wire``
_SOURCES = (Path(__file__), Path(__file__).with_name("jit_wire.py"))
_P = ctypes.c_void_p
_I = ctypes.c_int64
_LINE_HEADER_ARGS = (_P, _I, _P)
_DECODE_ARGS = (_P, _I, _I, _I, _I, _I, _I, _P, _I, _P, _I, _P, _P, _I, _P, _P, _I, _P, _I, _I, _P, _I, _P, _I, _I, _P, _I,
                _P, _P, _P, _P, _P, _P, _I, _I, _P)


class Kernels:
    """``jit_wire``'s two kernels, called with numpy arrays as the numba functions are. Each call has its own
    output array, so that threads may call them at once (ctypes lets the GIL go while the machine code runs)."""

    OK, FULL, WIDE = OK, FULL, WIDE

    def __init__(self, line_header, decode_line_events, engine):
        self._line_header, self._decode = line_header, decode_line_events
        self._engine = engine  # owns the machine code: kept as long as the functions are

    def line_header(self, buf: np.ndarray) -> tuple[int, ...]:
        out = np.zeros(9, dtype=np.int64)
        self._line_header(buf.ctypes.data, len(buf), out.ctypes.data)
        return tuple(out.tolist())

    def decode_line_events(self, buf, pos, end, max_events, row, text_base, narrow_ids, metadata_id, offset_ps,
                           duration_ps, meta_row, meta_row_by_id, meta_ids, meta_row_offset, stat_row_by_id, stat_ids,
                           stat_row_offset, wanted_row, out_event, out_name_row, out_kind, out_raw, out_text_start,
                           out_text_length, n_stats) -> tuple[int, ...]:
        out = np.zeros(4, dtype=np.int64)
        self._decode(buf.ctypes.data, len(buf), pos, end, max_events, row, text_base, narrow_ids.ctypes.data,
                     len(narrow_ids), metadata_id.ctypes.data, len(metadata_id), offset_ps.ctypes.data,
                     duration_ps.ctypes.data, len(offset_ps), meta_row.ctypes.data, meta_row_by_id.ctypes.data,
                     len(meta_row_by_id), meta_ids.ctypes.data, len(meta_ids), meta_row_offset,
                     stat_row_by_id.ctypes.data, len(stat_row_by_id), stat_ids.ctypes.data, len(stat_ids), stat_row_offset,
                     wanted_row.ctypes.data, len(wanted_row), out_event.ctypes.data, out_name_row.ctypes.data,
                     out_kind.ctypes.data, out_raw.ctypes.data, out_text_start.ctypes.data, out_text_length.ctypes.data,
                     len(out_event), n_stats, out.ctypes.data)
        return tuple(out.tolist())


_LOADED: list[Kernels] = []  # the kernels once loaded: one engine per process


def kernels(compile_if_missing: bool = True) -> Kernels | None:
    """The kernels from the cache, else (``compile_if_missing``) compiled by numba and cached;
    None where they cannot be had."""
    if not _LOADED:
        loaded = _kernels(compile_if_missing)
        if loaded is None:
            return None
        _LOADED.append(loaded)
    return _LOADED[0]


def forget() -> None:
    """Drop the loaded kernels (the next ``kernels()`` reads the cache again)."""
    _LOADED.clear()


def _kernels(compile_if_missing: bool) -> Kernels | None:
    try:
        import llvmlite.binding as llvm
    except Exception:  # noqa: BLE001 - llvmlite missing or broken: the numpy decoder
        return None
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    path = _cache_path(llvm)
    code = _read_cache(path)
    if code is None:
        if not compile_if_missing:
            return None
        try:
            code = _compile()
        except Exception:  # noqa: BLE001 - numba missing, or built against another numpy
            return None
        _store(path, code)
    return _load(llvm, code)


def is_cached() -> bool:
    """Whether this machine's cache holds the kernels (so that loading them costs milliseconds)."""
    try:
        import llvmlite.binding as llvm
    except Exception:  # noqa: BLE001
        return False
    path = _cache_path(llvm)
    return path is not None and path.is_file()


def _cache_path(llvm) -> Path | None:
    folder = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tpudoctor")
    if folder.startswith("~"):
        return None  # no home directory to expand
    key = hashlib.sha256()
    for source in _SOURCES:
        key.update(source.read_bytes())
    key.update(llvm.get_process_triple().encode())
    key.update(llvm.get_host_cpu_name().encode())
    key.update(llvm.get_host_cpu_features().flatten().encode())
    return Path(folder) / f"xspace-decoder-{key.hexdigest()[:24]}.o"


_MAGIC = b"tpudoctor-xspace-decoder-1\n"


def _read_cache(path: Path | None) -> bytes | None:
    """The cached code, None where there is none or it is not whole (LLVM must never see a damaged
    object file: it does not check one, it crashes): the file carries its own SHA-256."""
    try:
        data = path.read_bytes() if path is not None else b""
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if not data.startswith(_MAGIC) or hashlib.sha256(data[head:]).digest() != data[len(_MAGIC):head]:
        return None
    return data[head:]


def _store(path: Path | None, code: bytes) -> None:
    """Write the object code beside its final name, then rename: a reader never sees half a file."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, delete=False) as handle:
            handle.write(_MAGIC + hashlib.sha256(code).digest() + code)
        os.replace(handle.name, path)
    except OSError:
        pass  # a read-only home: compiled again next time


def _load(llvm, code: bytes) -> Kernels:
    """The two C functions of the cached code (each object file in its own engine), ready to call."""
    functions, engines = [], []
    position = 0
    for args in (_LINE_HEADER_ARGS, _DECODE_ARGS):
        name_length = int.from_bytes(code[position:position + 4], "little")
        name = code[position + 4:position + 4 + name_length].decode()
        position += 4 + name_length
        object_length = int.from_bytes(code[position:position + 8], "little")
        target = llvm.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target)
        engine.add_object_file(llvm.ObjectFileRef.from_data(code[position + 8:position + 8 + object_length]))
        position += 8 + object_length
        engine.finalize_object()
        address = engine.get_function_address(name)
        if not address:
            raise RuntimeError(f"the cached decoder has no {name}")
        functions.append(ctypes.CFUNCTYPE(None, *args)(address))
        engines.append(engine)
    return Kernels(*functions, engines)


def _compile() -> bytes:
    """numba's object code for C wrappers of the kernels, headed by their symbol names."""
    from numba import carray, cfunc, types

    from tpudoctor.captures.xspace import jit_wire

    i64, u8 = types.int64, types.uint8
    ptr = types.CPointer

    @cfunc(types.void(ptr(u8), i64, ptr(i64)), nogil=True)
    def line_header_c(buf, n, out):
        result = jit_wire.line_header(carray(buf, n))
        values = carray(out, 9)
        for index in range(9):
            values[index] = result[index]

    @cfunc(types.void(ptr(u8), i64, i64, i64, i64, i64, i64, ptr(types.int16), i64, ptr(i64), i64, ptr(i64),
                      ptr(i64), i64, ptr(types.int32), ptr(i64), i64, ptr(i64), i64, i64, ptr(i64), i64, ptr(i64), i64,
                      i64, ptr(u8), i64, ptr(i64), ptr(types.int32), ptr(types.int8), ptr(types.uint64), ptr(i64), ptr(i64),
                      i64, i64, ptr(i64)), nogil=True)
    def decode_line_events_c(buf, n_buf, pos, end, max_events, row, text_base, narrow_ids, n_narrow, metadata_id,
                             n_wide, offset_ps, duration_ps, n_rows, meta_row, meta_row_by_id, n_meta_by_id, meta_ids,
                             n_meta_ids, meta_row_offset, stat_row_by_id, n_by_id, stat_ids, n_ids,
                             stat_row_offset, wanted_row, n_wanted, out_event, out_name_row, out_kind, out_raw,
                             out_text_start, out_text_length, capacity, n_stats, out):
        result = jit_wire.decode_line_events(
            carray(buf, n_buf), pos, end, max_events, row, text_base, carray(narrow_ids, n_narrow),
            carray(metadata_id, n_wide), carray(offset_ps, n_rows), carray(duration_ps, n_rows),
            carray(meta_row, n_rows),
            carray(meta_row_by_id, n_meta_by_id), carray(meta_ids, n_meta_ids), meta_row_offset,
            carray(stat_row_by_id, n_by_id), carray(stat_ids, n_ids), stat_row_offset, carray(wanted_row, n_wanted),
            carray(out_event, capacity), carray(out_name_row, capacity),
            carray(out_kind, capacity), carray(out_raw, capacity), carray(out_text_start, capacity),
            carray(out_text_length, capacity), n_stats)
        values = carray(out, 4)
        for index in range(4):
            values[index] = result[index]

    code = b""
    for function in (line_header_c, decode_line_events_c):
        library = function._library
        name = function.native_name.encode()
        machine_code = library._codegen._tm.emit_object(library._final_module)
        code += len(name).to_bytes(4, "little") + name + len(machine_code).to_bytes(8, "little") + machine_code
    return code

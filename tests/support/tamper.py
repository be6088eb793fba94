"""Tables damaged in place the way a disk or an interrupted copy damages them (tables and workflow tests)."""
from __future__ import annotations

import os

import pyarrow.parquet as pq


def flip_last_byte_of_first_column(path):
    """A flipped byte inside the first column chunk's last data page; file size and mtime unchanged."""
    col = pq.ParquetFile(path).metadata.row_group(0).column(0)
    off = (col.dictionary_page_offset or col.data_page_offset) + col.total_compressed_size - 1
    st = os.stat(path)
    b = bytearray(path.read_bytes())
    b[off] ^= 0xFF
    path.write_bytes(bytes(b))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

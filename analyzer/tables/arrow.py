"""The fixed Arrow schemas of cancelwire's Parquet files (`--exchanges X.parquet`, `--dataset DIR`).

A schema is never inferred from the data: pandas gives a category column int8 codes in a chunk of
fewer than 128 distinct values and int16 in the next, and Parquet refuses a file whose row groups
differ ("Table schema does not match schema used to create file"). Every chunk is converted to the
schema below instead: text with few distinct values is dictionary-encoded with int32 indices, counts
are int64, timestamps float64 epoch seconds (UTC). The columns are documented in exchanges.py
(exchanges) and frames.py (findings, cancellations). SCHEMA_VERSION changes with any column change.

pyarrow is the optional extra `cancelwire[parquet]`; this module imports it when called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import CancelwireError

SCHEMA_VERSION = "3"

#: pandas dtype (tables.COLUMNS, frames.*_COLUMNS) → Arrow type name below.
_TYPES = {
    "category": "dictionary",
    "string": "string",
    "float64": "float64",
    "bool": "bool",
    "Int64": "int64",
}


def pyarrow_module(what: str) -> Any:
    """pyarrow, or a clear error naming the extra that brings it."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise CancelwireError(
            f"{what}: writing Parquet needs pyarrow", "pip install 'cancelwire[parquet]' (or write .csv)"
        ) from None
    return pyarrow


def schema(table: str, columns: Mapping[str, str], extra: Mapping[str, str] | None = None) -> Any:
    """The Arrow schema of TABLE's COLUMNS (pandas dtypes), plus EXTRA columns (Arrow type names)."""
    pa = pyarrow_module(table)
    types = {
        "dictionary": pa.dictionary(pa.int32(), pa.string()),
        "string": pa.string(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "int64": pa.int64(),
    }
    fields = [pa.field(name, types[_TYPES[dtype]]) for name, dtype in columns.items()]
    fields += [pa.field(name, types[kind]) for name, kind in (extra or {}).items()]
    return pa.schema(fields, metadata={"cancelwire.table": table, "cancelwire.schema": SCHEMA_VERSION})


def table_of(frame: Any, arrow_schema: Any) -> Any:
    """A pandas frame as an Arrow table of exactly ARROW_SCHEMA (types and metadata)."""
    pa = pyarrow_module("table")
    table = pa.Table.from_pandas(frame, schema=arrow_schema, preserve_index=False)
    return table.replace_schema_metadata(arrow_schema.metadata)

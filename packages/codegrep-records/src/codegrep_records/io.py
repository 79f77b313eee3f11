"""Guarded reading and writing of the files the toolkit's commands take in and put out.

Reading: `parse_json` decodes a JSON document from outside (too deep, a number Python should
not hold, a lone surrogate: a `ValueError` with a one-line reason); `read_json_file`,
`read_json_object` and `read_text_file` read a whole file that way (a `RecordFileError` that
starts with the path); `load_records` reads a file of rows as any pydantic model, counting the
rows it skips, each described by `describe_validation_error`. `dumps_json` writes JSON that
`parse_json` reads back.

Writing: `why_unwritable` says before the work why an output could not be written;
`write_atomically`, `open_replacing` and `open_appending` write one without following a link
planted where it goes; `write_records` writes JSON Lines (gzipped by the name).

The records themselves and their own readers (`load_instances`, `load_predictions`,
`load_labels`, `read_rows`) are `codegrep_records`'s top-level names.
"""

from __future__ import annotations

from codegrep_records._json_files import (
    dumps_json,
    parse_json,
    read_json_file,
    read_json_object,
    read_text_file,
)
from codegrep_records._output import (
    open_appending,
    open_replacing,
    why_unwritable,
    write_atomically,
)
from codegrep_records._readers import describe_validation_error, load_records, write_records

__all__ = [
    "describe_validation_error",
    "dumps_json",
    "load_records",
    "open_appending",
    "open_replacing",
    "parse_json",
    "read_json_file",
    "read_json_object",
    "read_text_file",
    "why_unwritable",
    "write_atomically",
    "write_records",
]

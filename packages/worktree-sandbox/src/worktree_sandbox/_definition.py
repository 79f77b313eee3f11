"""The record of one definition, shared by the index (`symbols`), the extraction rules and the
disk cache, so that none of them imports another for it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFINITION_KINDS", "Definition"]

DEFINITION_KINDS = (
    "class",
    "function",
    "method",
    "struct",
    "interface",
    "enum",
    "trait",
    "type",
    "module",
    "macro",
    "constant",
)


@dataclass(frozen=True, slots=True)
class Definition:
    """One definition of a file."""

    name: str  # the bare name: "parse"
    qualname: (
        str  # enclosing classes, impls, namespaces and functions joined by ".": "Parser.parse"
    )
    kind: str  # one of DEFINITION_KINDS
    line: int  # 1-based first line, decorators, annotations and `template <...>` included
    end_line: int  # 1-based last line
    name_line: int = 0  # 1-based line of the name itself (`def parse` after decorators); 0: line

    def __post_init__(self) -> None:
        if self.name_line == 0:
            object.__setattr__(self, "name_line", self.line)

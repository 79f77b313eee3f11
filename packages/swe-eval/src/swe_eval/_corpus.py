"""What the baselines index: the text files of a tree at a commit, and code-aware tokens.

Internal to the baselines; the tree is anything with `files()` and `read_bytes(path)` (a
worktree-sandbox tree, or the in-memory `MappingTree` tests use).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from codegrep_records import is_test_path
from worktree_sandbox import SandboxError

__all__ = ["Document", "FileSource", "MappingTree", "code_tokens", "collect_documents"]

# Sniff this much for a NUL byte, like git and ripgrep do to call a file binary.
_BINARY_SNIFF = 8192
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Words that match almost every file and every issue; dropping them keeps postings short.
_STOP = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "self",
        "that",
        "the",
        "then",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "def",
        "return",
        "import",
        "none",
        "true",
        "false",
        "not",
        "elif",
        "else",
        "class",
        "pass",
    )
)


class FileSource(Protocol):
    """The part of a worktree-sandbox tree the baselines need."""

    def files(self) -> Sequence[str]: ...

    def read_bytes(self, path: str) -> bytes: ...


@dataclass(frozen=True)
class MappingTree:
    """A tree held in memory: path -> content. For tests and for callers with their own files."""

    contents: Mapping[str, bytes]

    def files(self) -> Sequence[str]:
        return tuple(sorted(self.contents))

    def read_bytes(self, path: str) -> bytes:
        return self.contents[path]


@dataclass(frozen=True)
class Document:
    path: str
    text: str


def collect_documents(
    source: FileSource, *, exclude_tests: bool = True, max_file_bytes: int = 512_000
) -> list[Document]:
    """Text files of `source`, each cut to `max_file_bytes`.

    Test files are left out by default because the gold rule never counts them (see
    `codegrep_records.GoldRule`): returning one can only cost precision. Files whose content
    the clone lacks (partial mirrors leave large data files out) are left out too: nothing to
    rank.
    """
    docs = []
    for path in source.files():
        if exclude_tests and is_test_path(path):
            continue
        try:
            data = source.read_bytes(path)
        except (KeyError, SandboxError):
            continue
        if b"\0" in data[:_BINARY_SNIFF]:
            continue
        docs.append(Document(path, data[:max_file_bytes].decode("utf-8", errors="replace")))
    return docs


def code_tokens(text: str) -> list[str]:
    """Lower-cased identifiers plus their snake_case and camelCase parts.

    `HTTPAdapter.send_request` gives http_adapter-style pieces: 'httpadapter', 'http', 'adapter',
    'send_request', 'send', 'request', so an issue that says "send request" still matches.
    """
    out: list[str] = []
    for ident in _IDENT.findall(text):
        low = ident.lower()
        parts = [p for chunk in ident.split("_") for p in _CAMEL.findall(chunk)]
        if len(parts) > 1 or low != (parts[0].lower() if parts else low):
            if len(low) > 1 and low not in _STOP:
                out.append(low)
            out.extend(p.lower() for p in parts if len(p) > 1 and p.lower() not in _STOP)
        elif len(low) > 1 and low not in _STOP:
            out.append(low)
    return out

"""The BM25 baseline: bm25s over each file's path and contents at the base commit.

The query is the issue text. A file's document is its path tokens (repeated `path_boost` times,
since a path names what a file is about) followed by its content tokens. Ranking is one index per
commit; `rank` returns up to `depth` files with their scores, and a cut (top k or score floor)
chosen on a development set turns the ranking into a short answer (see `swe_eval.cuts`).
"""

from __future__ import annotations

from dataclasses import dataclass

from swe_eval._corpus import FileSource, code_tokens, collect_documents
from swe_eval.errors import MissingExtraError

__all__ = ["BM25Config", "BM25Retriever"]


@dataclass(frozen=True)
class BM25Config:
    k1: float = 1.5
    b: float = 0.75
    path_boost: int = 3
    depth: int = 50
    exclude_tests: bool = True
    max_file_bytes: int = 512_000


class BM25Retriever:
    """Stateless between calls: each `rank` builds the index for the tree it is given."""

    name = "bm25"

    def __init__(self, config: BM25Config | None = None) -> None:
        self.config = config or BM25Config()

    def rank(self, source: FileSource, query: str) -> list[tuple[str, float]]:
        try:
            import bm25s  # type: ignore[import-untyped, unused-ignore]
        except ImportError as exc:  # pragma: no cover - bm25s is a declared dependency
            raise MissingExtraError("bm25", "bm25s") from exc
        import numpy as np

        cfg = self.config
        docs = collect_documents(
            source, exclude_tests=cfg.exclude_tests, max_file_bytes=cfg.max_file_bytes
        )
        if not docs:
            return []
        corpus = []
        for d in docs:
            path_tokens = code_tokens(d.path.replace("/", " ").replace(".", " "))
            corpus.append(path_tokens * cfg.path_boost + code_tokens(d.text))
        index = bm25s.BM25(k1=cfg.k1, b=cfg.b)
        index.index(corpus, show_progress=False)
        vocab = index.vocab_dict
        query_tokens = [t for t in code_tokens(query) if t in vocab]
        if not query_tokens:
            return []
        scores = index.get_scores(query_tokens)
        order = np.argsort(-scores, kind="stable")[: cfg.depth]
        return [(docs[i].path, float(scores[i])) for i in order if scores[i] > 0]

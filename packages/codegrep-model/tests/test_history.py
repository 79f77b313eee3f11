"""The history's scoring of files against an issue (`codegrep_model.policies.lexical._history`)."""

from __future__ import annotations

from codegrep_model.policies.lexical._history import HistoryIndex, history_index, terms
from worktree_sandbox.history import HistoryLog, LoggedCommit


def test_terms_split_identifiers_and_drop_noise() -> None:
    assert terms("Fix PrettyPrinter.print_Vector for 2 vectors (#1234) in the ok") == [
        "pretty",
        "printer",
        "print",
        "vector",
        "vectors",
    ]


LOG = HistoryLog(
    commits=(
        LoggedCommit("Fix pretty printing of vectors", ("printing/pretty.py",)),
        LoggedCommit("Pretty printer: wrap long vectors", ("printing/pretty.py", "CHANGES")),
        LoggedCommit("Speed up matrix multiplication", ("matrices/dense.py", "CHANGES")),
        LoggedCommit("Vectors: add cross product", ("vector/vector.py", "CHANGES")),
    )
)


def test_files_whose_commits_match_the_issue_score_highest() -> None:
    index = HistoryIndex.build(LOG)
    scores = index.scores("Pretty printing of a Vector breaks the baseline")
    assert max(scores, key=lambda f: scores[f]) == "printing/pretty.py"
    assert "matrices/dense.py" not in scores  # no word in common
    assert index.churn["CHANGES"] == 3
    assert index.churn["printing/pretty.py"] == 2
    assert index.scores("nothing in common here") == {}
    assert HistoryIndex.build(HistoryLog()).scores("pretty") == {}


def test_the_index_of_a_log_is_built_once() -> None:
    assert history_index(LOG) is history_index(LOG)
    same_words = HistoryLog(commits=LOG.commits)
    assert history_index(same_words) is not history_index(LOG)


def _document_bm25(log: HistoryLog, issue: str) -> dict[str, float]:
    """The scores written out from the definition: one document per file, the words of every
    message of the commits that touched it (a file listed twice counts twice)."""
    import math
    from collections import Counter

    docs: dict[str, Counter[str]] = {}
    for commit in log.commits:
        for f in commit.files:
            docs.setdefault(f, Counter()).update(terms(commit.message))
    lengths = {f: sum(d.values()) for f, d in docs.items()}
    avg = (sum(lengths.values()) / max(1, len(lengths))) or 1.0
    query = Counter(terms(issue))
    out: dict[str, float] = {}
    for w in sorted(query):
        having = {f: d[w] for f, d in docs.items() if d[w]}
        if not having:
            continue
        df = len(having)
        weight = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5)) * math.log1p(query[w])
        for f, tf in having.items():
            norm = 1.2 * (1 - 0.75 + 0.75 * (lengths[f] or 1) / avg)
            out[f] = out.get(f, 0.0) + weight * tf * 2.2 / (tf + norm)
    return {f: s for f, s in out.items() if s > 0}


def test_the_scores_are_the_documents_bm25() -> None:
    log = HistoryLog(
        commits=(
            *LOG.commits,
            LoggedCommit("", ("empty/message.py",)),  # a document of no words still counts
            LoggedCommit("vector vector printing", ("twice.py", "twice.py")),
            LoggedCommit("Pretty vectors again", ("printing/pretty.py",)),
        )
    )
    index = HistoryIndex.build(log)
    for issue in ("Pretty printing of a Vector", "vector vector vector", "matrix speed", "zzz"):
        assert index.scores(issue) == _document_bm25(log, issue)
    assert index.lengths["empty/message.py"] == 0
    assert index.churn["twice.py"] == 2
    assert index.term_frequencies("vector") == {"twice.py": 4}  # "vector" twice, the file twice


def test_logs_that_share_commits_share_their_split_messages() -> None:
    from codegrep_model.policies.lexical import _history

    other = HistoryLog(commits=(LoggedCommit("A new message here", ("new.py",)), *LOG.commits))
    HistoryIndex.build(LOG)
    before = dict(_history._MESSAGE_TERMS)
    HistoryIndex.build(other)
    added = set(_history._MESSAGE_TERMS) - set(before)
    assert added == {"A new message here"}  # the shared commits were split once
    assert HistoryIndex.build(other).scores("pretty") == _document_bm25(other, "pretty")

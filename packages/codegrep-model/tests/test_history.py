"""The history's scoring of files against an issue (`codegrep_model._history`)."""

from __future__ import annotations

from codegrep_model._history import HistoryIndex, history_index, terms
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

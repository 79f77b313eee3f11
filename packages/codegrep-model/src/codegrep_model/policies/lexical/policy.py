"""`LexicalPolicy`: a model-free, deterministic policy that drives the agent's own tools.

It reads the issue the way a careful developer skims it (paths, traceback frames, dotted module
names, identifiers in code, error messages), greps for where those names are defined and where the
messages are raised, ranks the candidate files, greps each top candidate for the issue's
identifiers and reads the best ones to confirm, then answers with the files its ranking puts
first. It is the built-in default of `codegrep localize` and the baseline any trained policy
must beat.

Turn plan (3 exploration turns available; it uses 2 and answers on the third):
1. definitions of the issue's identifiers (a Python/Go/Rust-shaped regular expression),
   error-message literals; by default also two usage greps (the strongest names as plain words)
   and one grep for definition-shaped lines of any language, whose files are parsed with the
   tree's definition index when the engine has one (`TreeContext.definitions`; up to 8 calls);
2. coverage of the issue's identifiers in each top candidate (grep with `path`), reads of the top 2;
3. answer. By default the learned ranker (`lexical.ranker`) orders the candidates, cuts
   the answer and gives each file its probability as its score; its features include the
   tree's git history (`TreeContext.commit_log`: how well the messages of the commits that
   touched a file match the issue, `lexical._history`), which the engine reads while the
   first two turns run, and each signal relative to the best candidate's. With
   `heuristic=True` (the policy of 0.1, `lexical-heuristic`): the best file and those within
   `keep_ratio` of its heuristic score, each scored `s / (s + score_half)` of that score `s`, in
   [0, 1] and monotone in the ranking but not a probability.

It keeps no per-rollout state: every reply is recomputed from the issue and the observations so
far, so one instance serves any number of concurrent rollouts; what a rollout's tree gives it
(`needs`: the definitions, the history) is held by the copy `for_tree` makes for that rollout.
Only the parse of the issue is remembered, keyed by the issue text, for the few most recent
issues: the engine asks once per turn with the same issue, and on a long issue the parse is the
policy's costliest step.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import re
from collections import OrderedDict, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from worktree_sandbox import GrepResult, ReadResult, language_of

from codegrep_model.policies.lexical._history import history_index
from codegrep_model.policies.lexical._issue import IssueClues, extract_clues
from codegrep_model.policies.lexical.ranker import RELATIVE, Ranker
from codegrep_model.policies.protocol import PolicyNeeds, PolicyReply, PolicyRequest, TreeContext
from codegrep_model.policies.shortlist import ShortlistConfig, ShortlistEntry, matched_lines
from codegrep_model.records import ToolCall

__all__ = ["Candidate", "LexicalConfig", "LexicalPolicy"]

_META = set("\\.^$|?*+()[]{}")
_DEF = r"(?:def|class|function|fn|func|struct|interface|trait|enum|type)"
_TEST = re.compile(
    r"(^|/)(tests?|testing|__tests__)/|(^|/)test_[^/]*$|_tests?\.py$|(^|/)conftest\.py$"
    # other languages: Go, JS/TS, Java/Maven, C/C++
    r"|_test\.go$|\.(test|spec)\.[cm]?[jt]sx?$|(^|/)src/test/|[a-z]Tests?\.java$|_test\.(c|cc|cpp)$"
)
# A line that may define one of {names} in a C-family, Java, Go or Rust file: modifiers or a
# return type, then the name (maybe `Class::`-qualified or behind `*`/`&`) and `(`; or a type
# keyword before the name.
_ANY_DEF = (
    r"^\s*(?:[\w<>\[\],*&:.]+\s+)+[*&]?(?:\w+::)*(?:{names})\s*\("
    r"|\b(?:class|interface|enum|struct|record|union|trait|type|impl)\s+(?:{names})\b"
)
# generated or built files: protobuf stubs, minified and bundled JavaScript
_GENERATED = re.compile(r"\.pb\.go$|_pb2(_grpc)?\.pyi?$|\.min\.[cm]?js$|(^|/)dist/")
# docs, examples and generated code (schema migrations) are rarely where a fix belongs
_DOCS = re.compile(
    r"(^|/)(docs?|doc_src|examples?|benchmarks?|asv_bench|tutorials?|migrations|vendor(ed)?)/"
)
_CODE_EXT = (".py", ".pyx", ".pyi", ".c", ".h", ".js", ".ts", ".go", ".rs", ".java", ".rb")


def _reason(evidence: list[str]) -> str:
    """ "defines `a`", "defines `b`", "in the traceback" -> "defines `a`, `b`; in the traceback"."""
    items = list(dict.fromkeys(evidence))
    names = [e.removeprefix("defines ") for e in items if e.startswith("defines ")]
    rest = [e for e in items if not e.startswith("defines ")]
    parts = ([f"defines {', '.join(names[:4])}"] if names else []) + rest
    return "; ".join(parts) or "its path matches the issue's words"


async def _none() -> tuple[()]:
    return ()


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _META else c for c in text)


@dataclass(frozen=True)
class LexicalConfig:
    """Weights of the heuristic ranking (tuned on SWE-bench Lite, see the package README), the
    extra greps and parsing of the ranked policy, and how many candidates the ranker scores."""

    max_identifiers: int = 24
    per_def_call: int = 8
    candidates: int = 6
    reads: int = 2
    path_weight: float = 4.0
    module_weight: float = 3.0
    frame_weight: float = 1.5
    last_frame_bonus: float = 1.0
    message_weight: float = 3.0
    def_weight: float = 1.0
    def_spread: float = 0.7
    word_weight: float = 0.1
    prefixed_factor: float = 0.5
    init_factor: float = 0.5
    init_file_factor: float = 0.6
    test_factor: float = 0.1
    docs_factor: float = 0.1
    other_ext_factor: float = 0.2
    coverage_floor: float = 0.2
    keep_ratio: float = 0.9
    max_files: int = 2
    # The ranking score a file needs for an answer score of 0.5 (see `LexicalPolicy._confidence`);
    # it shapes the scores only, never which files are chosen.
    score_half: float = 1.0
    # Candidates the learned ranker scores: the best of the heuristic ranking (a gold file below
    # rank 30 is very rare, and more rows only cost time).
    ranked_candidates: int = 30
    # Usage greps (the ranker's extra evidence): the strongest identifiers as plain words, in
    # `usage_calls` calls of `usage_per_call` names; files they find with no other evidence join
    # the candidates, at most `usage_candidates` of them.
    usage_calls: int = 2
    usage_per_call: int = 4
    usage_candidates: int = 10
    # Files of the usage greps parsed for definitions (tree-sitter, when installed), best first.
    parse_files: int = 24
    # Files whose commit messages match the issue best (BM25, `lexical._history`) join
    # the ranker's candidates, at most this many, when the tree has a history.
    history_candidates: int = 5
    # The answer's `ranking`: the best this many files with their scores, the answer's first
    # and beyond it (more candidates for a caller that wants them: `codegrep localize --top`);
    # 0: none. It never changes which files are answered.
    ranking: int = 0
    # The answer's `line_ranges`: each answered file's definitions of the issue's names (the
    # syntax tree's spans where the tree has a definition index, else the line the regular
    # expression matched), at most `max_line_ranges` a file.
    line_ranges: bool = True
    max_line_ranges: int = 8

    def __post_init__(self) -> None:
        if not self.score_half > 0:
            raise ValueError(f"score_half must be positive, not {self.score_half}")
        if self.ranking < 0 or self.max_line_ranges < 0:
            raise ValueError("ranking and max_line_ranges must be >= 0")


@dataclass(frozen=True)
class Candidate:
    """A file the answer could name: its heuristic score and the ranker's features."""

    path: str
    score: float
    features: dict[str, float]


@dataclass
class _Evidence:
    """What one reply found: the heuristic score, the features and reasons of each file."""

    score: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    features: dict[str, dict[str, float]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(float))
    )
    why: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    def_lines: dict[str, int] = field(default_factory=dict)
    reads: set[str] = field(default_factory=set)
    usage_only: list[str] = field(default_factory=list)
    history_only: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _History:
    """The history's evidence for one issue: BM25 of each file's commit messages, and how many
    commits touched each file."""

    scores: dict[str, float]
    churn: Mapping[str, int]


class LexicalPolicy:
    # Parsed issues kept: more than a batch's concurrent rollouts (`-j`), so each rollout parses
    # its issue once, and few enough that long issues do not pile up in memory.
    _PARSED_ISSUES = 64

    def __init__(
        self,
        config: LexicalConfig | None = None,
        *,
        ranker: Ranker | None = None,
        heuristic: bool = False,
        usage_greps: bool | None = None,
        history: bool | None = None,
    ) -> None:
        """`ranker`: the learned ranking of the answer (default: the shipped one);
        `heuristic=True`: no ranker, the hand-weighted order and cut of version 0.1 (and its
        calls: no usage greps and no history, unless `usage_greps=True` / `history=True`,
        which training data needs; neither changes the heuristic's answer)."""
        if heuristic and ranker is not None:
            raise ValueError("heuristic=True means no ranker; do not pass one")
        self.config = config or LexicalConfig()
        self.ranker: Ranker | None = None if heuristic else (ranker or Ranker.shipped())
        self.usage_greps = (self.ranker is not None) if usage_greps is None else usage_greps
        self._reads_history = (self.ranker is not None) if history is None else history
        # issue text -> its clues, least recently used first; the clues are only read
        self._parsed: OrderedDict[str, IssueClues] = OrderedDict()
        # what one rollout's tree gave (`for_tree`); nothing until a rollout binds a copy
        self._tree = TreeContext()

    @property
    def name(self) -> str:
        return "lexical" if self.ranker is not None else "lexical-heuristic"

    @property
    def needs(self) -> PolicyNeeds:
        """The tree's definition index (the usage greps' files are parsed with it, the answer's
        line ranges read from it), its history when the ranker reads it (or `history=True`),
        and a thread of its own: its ranking is Python computation."""
        return PolicyNeeds(definitions=True, history=self._reads_history, own_thread=True)

    def for_tree(self, context: TreeContext) -> LexicalPolicy:
        """This policy for one rollout whose tree gave `context`: a copy that shares its
        configuration, its ranker and its cache of parsed issues."""
        bound = copy.copy(self)
        bound._tree = context
        return bound

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        clues = self._clues(request.instance.problem_statement)
        idents = self._identifiers(clues)
        tool_turns = len(request.history)
        if not request.answer_turn and tool_turns == 0:
            calls = self._search_calls(clues, idents, request.max_calls, self.usage_greps)
            if calls:
                return PolicyReply(content=None, tool_calls=calls)
        parsed = await self._parsed_definitions(request, idents)
        hist = await self._history(request) if self.ranker is not None else None
        ev = self._evidence(request, clues, idents, parsed, hist)
        if not request.answer_turn and tool_turns == 1 and ev.score:
            calls = self._confirm_calls(ev.score, ev.def_lines, idents, request.max_calls)
            if calls:
                return PolicyReply(content=None, tool_calls=calls)
        ranking: list[tuple[str, float]]
        if self.ranker is None:
            files = self._choose(ev.score)
            confidence = [self._confidence(ev.score[f]) for f in files]
            ranked = sorted(
                (f for f in ev.score if ev.score[f] > 0), key=lambda f: (-ev.score[f], f)
            )[: self.config.ranking]
            ranking = [(f, self._confidence(ev.score[f])) for f in ranked]
        else:
            cands = self._candidates(ev)
            files, confidence = self._choose_ranked(cands, self.ranker)
            top = self.config.ranking
            ranking = self._ranking(cands, self.ranker, top) if top else []
        reasons = {f: _reason(ev.why[f]) for f in files}
        answer: dict[str, object] = {"files": files, "scores": confidence, "reasons": reasons}
        if self.config.line_ranges:
            answer["line_ranges"] = await self._line_ranges(request, files, idents, ev.def_lines)
        if self.config.ranking:
            answer["ranking"] = [[f, p] for f, p in ranking]
        return PolicyReply(content=json.dumps(answer))

    async def _line_ranges(
        self,
        request: PolicyRequest,
        files: list[str],
        idents: dict[str, float],
        def_lines: dict[str, int],
    ) -> dict[str, list[list[int]]]:
        """file -> [[first, last], ...]: the answered files' definitions of the issue's names,
        outermost first by line (a method inside a matched class is the class's span); from the
        tree's definition index where it has the file's language, else the line of the first
        definition the regular expression matched; files with neither have none."""
        lookup = self._tree.definitions
        parsed: list[object] = [()] * len(files)
        if lookup is not None:
            parsed = list(
                await asyncio.gather(
                    *(lookup(f) if language_of(f) is not None else _none() for f in files),
                    return_exceptions=True,
                )
            )
        out: dict[str, list[list[int]]] = {}
        for f, defs in zip(files, parsed, strict=True):
            spans: list[tuple[int, int]] = []
            if not isinstance(defs, BaseException) and isinstance(defs, tuple | list):
                found = sorted({(d.line, d.end_line) for d in defs if d.name in idents})
                for a, b in found:
                    if not any(x <= a and b <= y for x, y in spans):
                        spans.append((a, b))
            if not spans and f in def_lines:
                spans = [(def_lines[f], def_lines[f])]
            if spans:
                out[f] = [[a, b] for a, b in spans[: self.config.max_line_ranges]]
        return out

    async def candidates(self, request: PolicyRequest) -> list[Candidate]:
        """The candidate files of the answer this request would get, best heuristic score
        first, with the features the learned ranker reads (see `lexical.ranker`)."""
        clues = self._clues(request.instance.problem_statement)
        idents = self._identifiers(clues)
        parsed = await self._parsed_definitions(request, idents)
        hist = await self._history(request)
        return self._candidates(self._evidence(request, clues, idents, parsed, hist))

    async def shortlist(
        self, request: PolicyRequest, config: ShortlistConfig | None = None
    ) -> list[ShortlistEntry]:
        """The best `config.size` candidates of the answer `request` would get, in the order
        the answer ranks them (the ranker's probabilities, else the heuristic score), each with
        its reasons and the lines the exploration's greps matched in it
        (`codegrep_model.policies.shortlist`)."""
        cfg = config or ShortlistConfig()
        clues = self._clues(request.instance.problem_statement)
        idents = self._identifiers(clues)
        parsed = await self._parsed_definitions(request, idents)
        hist = await self._history(request) if self.ranker is not None else None
        ev = self._evidence(request, clues, idents, parsed, hist)
        cands = self._candidates(ev)
        if self.ranker is not None:
            ranker = self.ranker
            order = sorted(
                range(len(cands)), key=lambda i: (-ranker.probability(cands[i].features), i)
            )
            paths = [cands[i].path for i in order]
        else:
            paths = [c.path for c in cands if c.score > 0]
        paths = paths[: cfg.size]
        lines = matched_lines(request.history, paths, cfg)
        return [ShortlistEntry(p, _reason(ev.why[p]), lines[p]) for p in paths]

    async def _history(self, request: PolicyRequest) -> _History | None:
        """The history's evidence, once the tool turns are over (the answer is all it serves);
        None without a history or before the answer."""
        commit_log = self._tree.commit_log
        if not self._reads_history or commit_log is None:
            return None
        if not request.answer_turn and len(request.history) < 2:
            return None
        log = await commit_log()
        if not log.commits:
            return None
        index = history_index(log)
        issue = request.instance.problem_statement
        return _History(scores=index.scores(issue), churn=index.churn)

    async def _parsed_definitions(
        self, request: PolicyRequest, idents: dict[str, float]
    ) -> dict[str, dict[str, int]]:
        """file -> {issue identifier it defines: line}, from the tree's definition index, for
        the files the usage greps found most of the issue's names in (those with a grammar).
        Empty without an index (no `symbols` extra) or without usage greps."""
        lookup = self._tree.definitions
        if lookup is None or not self.usage_greps or not request.history:
            return {}
        names: dict[str, set[str]] = defaultdict(set)
        lines: dict[str, int] = defaultdict(int)
        shaped: set[str] = set()
        for obs in request.history[0]:
            r = obs.result
            if not isinstance(r, GrepResult) or not r.ok:
                continue
            if obs.call.id.startswith("lex_defx_"):
                shaped.update(m.path for m in r.matches)
            elif obs.call.id.startswith("lex_use_"):
                for m in r.matches:
                    lines[m.path] += 1
                    names[m.path].update(n for n in idents if n in m.text)
        files = sorted(
            (f for f in shaped | set(lines) if language_of(f) is not None),
            key=lambda f: (f not in shaped, -sum(idents[n] for n in names[f]), -lines[f], f),
        )[: self.config.parse_files]
        found = await asyncio.gather(*(lookup(f) for f in files), return_exceptions=True)
        out: dict[str, dict[str, int]] = {}
        for f, defs in zip(files, found, strict=True):
            if isinstance(defs, BaseException):
                continue  # an unreadable file: no evidence, as for any tool error
            hits = {d.name: d.name_line for d in reversed(defs) if d.name in idents}
            if hits:
                out[f] = hits
        return out

    def _candidates(self, ev: _Evidence) -> list[Candidate]:
        ranked = sorted((f for f in ev.score if ev.score[f] > 0), key=lambda f: (-ev.score[f], f))
        ranked = ranked[: self.config.ranked_candidates]
        best = ev.score[ranked[0]] if ranked else 1.0
        out = []
        for i, f in enumerate(ranked):
            s = ev.score[f]
            feats = {k: float(v) for k, v in ev.features[f].items()}
            feats.update(log_score=math.log1p(s), score_ratio=s / best, rank_inv=1.0 / (i + 1))
            out.append(Candidate(path=f, score=s, features=feats))
        for f in ev.usage_only + ev.history_only:
            feats = {k: float(v) for k, v in ev.features[f].items()}
            out.append(Candidate(path=f, score=0.0, features=feats))
        # each signal relative to the best candidate's: the ranker compares files of one issue
        best_of = {k: max((c.features.get(k, 0.0) for c in out), default=0.0) for k in RELATIVE}
        for cand in out:
            for k, top in best_of.items():
                v = cand.features.get(k, 0.0)
                cand.features[f"{k}_gap"] = v - top
                cand.features[f"{k}_best"] = 1.0 if top > 0 and v >= top else 0.0
        return out

    @staticmethod
    def _choose_ranked(cands: list[Candidate], ranker: Ranker) -> tuple[list[str], list[float]]:
        """The ranker's order and cut; scores are its probabilities (4 places)."""
        scored = sorted(
            ((ranker.probability(c.features), i, c) for i, c in enumerate(cands)),
            key=lambda t: (-t[0], t[1]),
        )
        probs = [p for p, _, _ in scored]
        n = ranker.cut.take(probs)
        return [c.path for _, _, c in scored[:n]], [round(p, 4) for p in probs[:n]]

    @staticmethod
    def _ranking(cands: list[Candidate], ranker: Ranker, top: int) -> list[tuple[str, float]]:
        """The first `top` files of the ranker's order with their probabilities (4 places),
        the answer's and beyond: the order `_choose_ranked` cuts."""
        scored = sorted(
            ((ranker.probability(c.features), i, c) for i, c in enumerate(cands)),
            key=lambda t: (-t[0], t[1]),
        )
        return [(c.path, round(p, 4)) for p, _, c in scored[:top]]

    def _clues(self, issue: str) -> IssueClues:
        clues = self._parsed.get(issue)
        if clues is None:
            clues = self._parsed[issue] = extract_clues(issue)
            if len(self._parsed) > self._PARSED_ISSUES:
                self._parsed.popitem(last=False)
        else:
            self._parsed.move_to_end(issue)
        return clues

    # -- turn 1 -------------------------------------------------------------------------------

    def _identifiers(self, clues: IssueClues) -> dict[str, float]:
        top = list(clues.identifiers.items())[: self.config.max_identifiers]
        return {k: math.log1p(v) for k, v in top}

    def _usage_names(self, idents: dict[str, float]) -> list[list[str]]:
        c = self.config
        names = list(idents)[: c.usage_calls * c.usage_per_call]
        return [names[i : i + c.usage_per_call] for i in range(0, len(names), c.usage_per_call)]

    def _search_calls(
        self, clues: IssueClues, idents: dict[str, float], cap: int, usage: bool = False
    ) -> tuple[ToolCall, ...]:
        calls: list[ToolCall] = []
        names = list(idents)
        step = self.config.per_def_call
        for i in range(0, len(names), step):
            chunk = "|".join(_escape(n) for n in names[i : i + step])
            pattern = rf"^\s*(?:export\s+)?(?:pub\s+)?(?:async\s+)?{_DEF}\s+(?:\w+_)?(?:{chunk})\b"
            calls.append(self._call(len(calls), "grep", {"pattern": pattern, "max_results": 1000}))
        for msg in clues.messages[:2]:
            calls.append(
                self._call(len(calls), "grep", {"pattern": _escape(msg), "max_results": 200})
            )
        if usage:
            # definition-shaped lines of any language (a call statement matches too): the files
            # the definition index is asked about first; the syntax tree decides what is defined
            top = "|".join(_escape(n) for n in list(idents)[: self.config.per_def_call])
            if top:
                args = {"pattern": _ANY_DEF.format(names=top), "max_results": 1000}
                calls.append(
                    ToolCall(id=f"lex_defx_{len(calls)}", name="grep", arguments=json.dumps(args))
                )
            for chunk_names in self._usage_names(idents):
                alternation = "|".join(_escape(n) for n in chunk_names)
                args = {"pattern": rf"\b(?:{alternation})\b", "max_results": 1000}
                calls.append(
                    ToolCall(id=f"lex_use_{len(calls)}", name="grep", arguments=json.dumps(args))
                )
        return tuple(calls[:cap])

    @staticmethod
    def _call(i: int, name: str, args: dict[str, object]) -> ToolCall:
        return ToolCall(id=f"lex_{name}_{i}", name=name, arguments=json.dumps(args))

    # -- ranking ------------------------------------------------------------------------------

    def _resolve(
        self, mention: str, files: tuple[str, ...], by_suffix: dict[str, list[str]]
    ) -> list[str]:
        parts = mention.strip("/").split("/")
        # a traceback path like /usr/lib/python3/site-packages/pkg/mod.py: drop leading parts
        # until the rest is a suffix of some repository path
        for k in range(len(parts)):
            hits = by_suffix.get("/".join(parts[k:]), [])
            if hits:
                return hits
        return []

    def _evidence(
        self,
        request: PolicyRequest,
        clues: IssueClues,
        idents: dict[str, float],
        parsed: dict[str, dict[str, int]] | None = None,
        hist: _History | None = None,
    ) -> _Evidence:
        """The heuristic ranking score of every file with evidence, and the evidence itself as
        named features (what the learned ranker reads; see `lexical.ranker`)."""
        c = self.config
        ev = _Evidence()
        why, score, feat = ev.why, ev.score, ev.features
        files = request.repo_files
        by_suffix: dict[str, list[str]] = defaultdict(list)
        for f in files:
            parts = f.split("/")
            for k in range(len(parts)):
                by_suffix["/".join(parts[k:])].append(f)
        for p in clues.paths:
            hits = self._resolve(p, files, by_suffix)
            for h in hits:
                score[h] += c.path_weight / len(hits)
                feat[h]["path_named"] += 1 / len(hits)
                why[h].append("named in the issue")
        repo_frames = []
        for fp, _, _ in clues.frames:
            hits = self._resolve(fp, files, by_suffix)
            if len(hits) == 1:
                repo_frames.append(hits[0])
        for h in dict.fromkeys(repo_frames):
            score[h] += c.frame_weight
            feat[h]["frame"] = 1.0
            why[h].append("in the traceback")
        if repo_frames:
            score[repo_frames[-1]] += c.last_frame_bonus
            feat[repo_frames[-1]]["last_frame"] = 1.0
        for dotted in clues.dotted:
            parts = dotted.split(".")
            for k in range(len(parts), 1, -1):
                base = "/".join(parts[:k])
                hits = by_suffix.get(base + ".py", []) or by_suffix.get(base + "/__init__.py", [])
                if len(hits) == 1:
                    w = c.module_weight * (0.5 if k < len(parts) else 1.0)
                    if hits[0].endswith("__init__.py"):
                        w *= c.init_factor
                    score[hits[0]] += w
                    feat[hits[0]]["module"] += w / c.module_weight if c.module_weight else 0.0
                    why[hits[0]].append(f"module `{'.'.join(parts[:k])}`")
                    break
        def_lines = ev.def_lines
        defs: dict[str, set[str]] = defaultdict(set)
        first_line: dict[tuple[str, str], int] = {}
        msg_files: dict[str, set[str]] = defaultdict(set)
        coverage: dict[str, float] = {}
        mentions: dict[str, int] = defaultdict(int)
        use_lines: dict[str, int] = defaultdict(int)
        use_names: dict[str, set[str]] = defaultdict(set)
        # one compiled alternation per reply: the matches of a big repository are thousands of
        # lines, and a regex per (line, name) pair would cost more than the tools themselves
        alternation = "|".join(re.escape(n) for n in sorted(idents, key=len, reverse=True))
        names_re = re.compile(rf"\b({alternation})\b" if alternation else r"(?!)")
        def_res = {n: re.compile(rf"{_DEF}\s+(\w+_)?{re.escape(n)}\b") for n in idents}
        for turn in request.history:
            for obs in turn:
                r = obs.result
                if isinstance(r, ReadResult):
                    ev.reads.add(r.path)
                    continue
                if not isinstance(r, GrepResult) or not r.ok:
                    continue
                if obs.call.id.startswith("lex_defx_"):
                    continue  # only where to look: the parsed definitions are the evidence
                if obs.call.id.startswith("lex_use_"):
                    for m in r.matches:
                        use_lines[m.path] += 1
                        use_names[m.path].update(names_re.findall(m.text))
                    continue
                for m in r.matches:
                    mentions[m.path] += 1
                args = json.loads(obs.call.arguments)
                if args.get("path"):
                    found = {h for m in r.matches for h in names_re.findall(m.text)}
                    total = sum(idents.values()) or 1.0
                    # sorted: a sum in set order depends on the hash seed (flips near-ties)
                    coverage[args["path"]] = sum(idents[n] for n in sorted(found)) / total
                elif obs.call.id.startswith("lex_grep_") and "def|class" in args["pattern"]:
                    for m in r.matches:
                        # a substring test first (cheap), the exact pattern only for the names
                        # the line contains
                        for n in (n for n in idents if n in m.text):
                            hit = def_res[n].search(m.text)
                            if hit:
                                key = n if hit.group(1) is None else "_" + n
                                defs[key].add(m.path)
                                first_line.setdefault((key, m.path), m.line)
                else:
                    for m in r.matches:
                        msg_files[args["pattern"].replace("\\", "")].add(m.path)
        for f, defined in (parsed or {}).items():
            # definitions the syntax tree shows (any language with a grammar), where the regular
            # expression of the first turn only knows Python-, Go- and Rust-shaped ones
            for n, line in defined.items():
                feat[f]["ts_defs"] += 1
                if f not in defs[n]:
                    defs[n].add(f)
                    first_line.setdefault((n, f), line)
        top_strength = max(idents.values(), default=1.0) or 1.0
        for n, where in defs.items():
            # "_X" stands for prefixed definitions such as `_print_X`: weaker evidence
            exact = n in idents
            strength = idents[n] if exact else c.prefixed_factor * idents[n[1:]]
            weight = c.def_weight * strength / len(where) ** c.def_spread
            shown = n if exact else f"*_{n[1:]}"
            for f in where:
                score[f] += weight
                x = feat[f]
                x["def_strength"] += strength / len(where) ** c.def_spread
                if exact:
                    x["def_names"] += 1
                    x["def_title"] = max(x["def_title"], 1.0 if n in clues.title_names else 0.0)
                    x["def_unique"] += 1.0 if len(where) == 1 else 0.0
                    x["def_top"] = max(x["def_top"], strength / top_strength)
                else:
                    x["def_prefixed"] += 1
                why[f].append(f"defines `{shown}`")
                def_lines.setdefault(f, first_line[(n, f)])
        for pattern, where in msg_files.items():
            for f in where:
                score[f] += c.message_weight / len(where)
                feat[f]["message"] += 1 / len(where)
                why[f].append(f"has the message '{pattern[:40]}'")
        prior = self._path_prior(score, files, clues)
        for f, v in prior.items():
            feat[f]["path_prior"] = v
        usage_total = sum(idents[n] for chunk in self._usage_names(idents) for n in chunk) or 1.0
        for f in use_lines:
            x = feat[f]
            x["use_cov"] = sum(idents[n] for n in sorted(use_names[f]) if n in idents) / usage_total
            x["use_lines"] = math.log1p(use_lines[f])
            x["use_title"] = 1.0 if use_names[f] & clues.title_names else 0.0
        # files that only the usage greps found: candidates of the ranker, never of the heuristic
        extra = sorted(
            (f for f in use_lines if f not in score and feat[f]["use_cov"] > 0),
            key=lambda f: (-feat[f]["use_cov"], -use_lines[f], f),
        )
        ev.usage_only = extra[: c.usage_candidates]
        if hist is not None:
            self._history_features(ev, hist, files)
        for f in list(score) + ev.usage_only + ev.history_only:
            x = feat[f]
            factor = 1.0
            if _TEST.search(f):
                factor *= c.test_factor
                x["test"] = 1.0
            elif _DOCS.search(f) or _GENERATED.search(f):
                factor *= c.docs_factor
                x["docs"] = 1.0
            elif not f.endswith(_CODE_EXT):
                factor *= c.other_ext_factor
                x["other_ext"] = 1.0
            if f.endswith("/__init__.py"):
                factor *= c.init_file_factor
                x["init"] = 1.0
            if coverage and f not in coverage:
                # not confirmed: rank it as if it matched nothing, or unconfirmed files would
                # overtake the confirmed ones whose coverage is below 1
                factor *= c.coverage_floor
            if f in coverage:
                x["confirmed"] = 1.0
                x["coverage"] = coverage[f]
                factor *= c.coverage_floor + (1 - c.coverage_floor) * coverage[f]
                if coverage[f] > 0:
                    why[f].append(f"mentions {coverage[f]:.0%} of the issue's names")
            if f in score:
                score[f] *= factor
            x["mentions"] = math.log1p(mentions.get(f, 0))
            x["read"] = 1.0 if f in ev.reads else 0.0
            x["depth"] = float(f.count("/"))
            stem = f.rsplit("/", 1)[-1].split(".", 1)[0].lower()
            x["stem_in_issue"] = 1.0 if len(stem) > 3 and stem in clues.word_set else 0.0
        return ev

    def _history_features(self, ev: _Evidence, hist: _History, files: tuple[str, ...]) -> None:
        """History features of every candidate; the best files by history that no other signal
        found join the candidates (files of this tree only: history names deleted ones too)."""
        present = set(files)
        ranked = sorted(
            (f for f in hist.scores if f in present), key=lambda f: (-hist.scores[f], f)
        )
        rank = {f: i for i, f in enumerate(ranked)}
        known = set(ev.score) | set(ev.usage_only)
        ev.history_only = [f for f in ranked if f not in known][: self.config.history_candidates]
        for f in list(known) + ev.history_only:
            x = ev.features[f]
            if f in rank:
                x["hist_bm25"] = hist.scores[f]
                x["hist_rank_inv"] = 1.0 / (1 + rank[f])
                if rank[f] < 10:
                    ev.why[f].append("its commits' messages match the issue")
            x["churn"] = math.log1p(hist.churn.get(f, 0))

    def _path_prior(
        self, score: dict[str, float], files: tuple[str, ...], clues: IssueClues
    ) -> dict[str, float]:
        """Issue words that name path components ("latex", "napoleon", "junitxml"), weighted by
        how rare the component is in the repository: a prior over every source file. Adds
        `word_weight` times the prior to `score` and returns the prior of each file it touched."""
        c = self.config
        tf: dict[str, int] = defaultdict(int)
        for w in clues.words:
            tf[w] += 1
        if not tf:
            return {}
        token_sets: dict[str, set[str]] = {}
        df: dict[str, int] = defaultdict(int)
        for f in files:
            if not f.endswith(_CODE_EXT):
                continue
            toks = {t for t in re.split(r"[/_.\-]", f.lower()) if len(t) > 3}
            token_sets[f] = toks
            for t in toks:
                df[t] += 1
        n = max(1, len(token_sets))
        prior: dict[str, float] = {}
        for f, toks in token_sets.items():
            s = sum(math.log(n / df[t]) * math.log1p(tf[t]) for t in sorted(toks) if t in tf)
            if s > 0:
                score[f] += c.word_weight * s
                prior[f] = s
        return prior

    # -- turn 2 -------------------------------------------------------------------------------

    def _confirm_calls(
        self,
        scores: dict[str, float],
        def_lines: dict[str, int],
        idents: dict[str, float],
        cap: int,
    ) -> tuple[ToolCall, ...]:
        ranked = sorted(scores, key=lambda f: (-scores[f], f))
        calls: list[ToolCall] = []
        alternation = "|".join(_escape(n) for n in idents)
        if alternation:
            for f in ranked[: self.config.candidates]:
                calls.append(
                    self._call(
                        len(calls),
                        "grep",
                        {"pattern": rf"\b(?:{alternation})\b", "path": f, "max_results": 1000},
                    )
                )
        for f in ranked[: self.config.reads]:
            start = max(1, def_lines.get(f, 1) - 20)
            calls.append(
                self._call(
                    len(calls), "read", {"path": f, "start_line": start, "end_line": start + 80}
                )
            )
        return tuple(calls[:cap])

    # -- answer -------------------------------------------------------------------------------

    def _confidence(self, score: float) -> float:
        """The answer's score of a file whose ranking score is `score`: `s / (s + score_half)`.

        In [0, 1] and non-decreasing in `s`, so a file ranked higher never gets a lower score
        (rounding to 4 places keeps that; it can only make near ties equal, and reaches 1 only
        for s of about 20,000 times score_half). Not a probability:
        `s` sums evidence weights, and how often a file with a given score is right is for
        calibration to measure.
        """
        s = max(score, 0.0)
        return round(s / (s + self.config.score_half), 4)

    def _choose(self, scores: dict[str, float]) -> list[str]:
        ranked = sorted(scores, key=lambda f: (-scores[f], f))
        if not ranked or scores[ranked[0]] <= 0:
            return []
        best = scores[ranked[0]]
        keep = [f for f in ranked if scores[f] >= self.config.keep_ratio * best]
        return keep[: self.config.max_files]

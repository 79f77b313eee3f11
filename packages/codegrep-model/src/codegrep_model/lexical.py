"""`LexicalPolicy`: a model-free, deterministic policy that drives the agent's own tools.

It reads the issue the way a careful developer skims it (paths, traceback frames, dotted module
names, identifiers in code, error messages), greps for where those names are defined and where the
messages are raised, ranks the candidate files, greps each top candidate for the issue's
identifiers and reads the best ones to confirm, then answers with the few files whose evidence is
close to the best. It is the built-in default of `codegrep localize` and the baseline any trained
policy must beat.

Turn plan (3 exploration turns available; it uses 2 and answers on the third):
1. definitions of the issue's identifiers, error-message literals (grep, up to 8 calls);
2. coverage of the issue's identifiers in each top candidate (grep with `path`), reads of the top 2;
3. answer, with a score per file: `s / (s + score_half)` of the file's ranking score `s`, so in
   [0, 1] and monotone in the ranking. It is not a calibrated probability (calibration is a later
   step, on top of these scores); it only orders answers by how much evidence they rest on.

It keeps no per-rollout state: every reply is recomputed from the issue and the observations so
far, so one instance serves any number of concurrent rollouts. Only the parse of the issue is
remembered, keyed by the issue text, for the few most recent issues: the engine asks once per
turn with the same issue, and on a long issue the parse is the policy's costliest step.
"""

from __future__ import annotations

import json
import math
import re
from collections import OrderedDict, defaultdict
from dataclasses import dataclass

from worktree_sandbox import GrepResult, ReadResult

from codegrep_model._issue import IssueClues, extract_clues
from codegrep_model.policy import PolicyReply, PolicyRequest
from codegrep_model.records import ToolCall

__all__ = ["LexicalConfig", "LexicalPolicy"]

_META = set("\\.^$|?*+()[]{}")
_DEF = r"(?:def|class|function|fn|func|struct|interface|trait|enum|type)"
_TEST = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_tests?\.py$|(^|/)conftest\.py$")
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


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _META else c for c in text)


@dataclass(frozen=True)
class LexicalConfig:
    """Weights of the ranking; tuned on SWE-bench Lite (see the package README)."""

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

    def __post_init__(self) -> None:
        if not self.score_half > 0:
            raise ValueError(f"score_half must be positive, not {self.score_half}")


class LexicalPolicy:
    # Parsed issues kept: more than a batch's concurrent rollouts (`-j`), so each rollout parses
    # its issue once, and few enough that long issues do not pile up in memory.
    _PARSED_ISSUES = 64

    def __init__(self, config: LexicalConfig | None = None) -> None:
        self.config = config or LexicalConfig()
        # issue text -> its clues, least recently used first; the clues are only read
        self._parsed: OrderedDict[str, IssueClues] = OrderedDict()

    @property
    def name(self) -> str:
        return "lexical"

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        clues = self._clues(request.instance.problem_statement)
        idents = self._identifiers(clues)
        tool_turns = len(request.history)
        if not request.answer_turn and tool_turns == 0:
            calls = self._search_calls(clues, idents, request.max_calls)
            if calls:
                return PolicyReply(content=None, tool_calls=calls)
        scores, def_lines, why = self._rank(request, clues, idents)
        if not request.answer_turn and tool_turns == 1 and scores:
            calls = self._confirm_calls(scores, def_lines, idents, request.max_calls)
            if calls:
                return PolicyReply(content=None, tool_calls=calls)
        files = self._choose(scores)
        reasons = {f: _reason(why[f]) for f in files}
        confidence = [self._confidence(scores[f]) for f in files]
        return PolicyReply(
            content=json.dumps({"files": files, "scores": confidence, "reasons": reasons})
        )

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

    def _search_calls(
        self, clues: IssueClues, idents: dict[str, float], cap: int
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

    def _rank(
        self, request: PolicyRequest, clues: IssueClues, idents: dict[str, float]
    ) -> tuple[dict[str, float], dict[str, int], dict[str, list[str]]]:
        c = self.config
        why: dict[str, list[str]] = defaultdict(list)
        files = request.repo_files
        by_suffix: dict[str, list[str]] = defaultdict(list)
        for f in files:
            parts = f.split("/")
            for k in range(len(parts)):
                by_suffix["/".join(parts[k:])].append(f)
        score: dict[str, float] = defaultdict(float)
        for p in clues.paths:
            hits = self._resolve(p, files, by_suffix)
            for h in hits:
                score[h] += c.path_weight / len(hits)
                why[h].append("named in the issue")
        repo_frames = []
        for fp, _, _ in clues.frames:
            hits = self._resolve(fp, files, by_suffix)
            if len(hits) == 1:
                repo_frames.append(hits[0])
        for h in dict.fromkeys(repo_frames):
            score[h] += c.frame_weight
            why[h].append("in the traceback")
        if repo_frames:
            score[repo_frames[-1]] += c.last_frame_bonus
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
                    why[hits[0]].append(f"module `{'.'.join(parts[:k])}`")
                    break
        def_lines: dict[str, int] = {}
        defs: dict[str, set[str]] = defaultdict(set)
        first_line: dict[tuple[str, str], int] = {}
        msg_files: dict[str, set[str]] = defaultdict(set)
        coverage: dict[str, float] = {}
        reads: set[str] = set()
        # one compiled alternation per reply: the matches of a big repository are thousands of
        # lines, and a regex per (line, name) pair would cost more than the tools themselves
        alternation = "|".join(re.escape(n) for n in sorted(idents, key=len, reverse=True))
        names_re = re.compile(rf"\b({alternation})\b" if alternation else r"(?!)")
        def_res = {n: re.compile(rf"{_DEF}\s+(\w+_)?{re.escape(n)}\b") for n in idents}
        for turn in request.history:
            for obs in turn:
                r = obs.result
                if isinstance(r, ReadResult):
                    reads.add(r.path)
                    continue
                if not isinstance(r, GrepResult) or not r.ok:
                    continue
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
        for n, where in defs.items():
            # "_X" stands for prefixed definitions such as `_print_X`: weaker evidence
            strength = idents[n] if n in idents else c.prefixed_factor * idents[n[1:]]
            weight = c.def_weight * strength / len(where) ** c.def_spread
            shown = n if n in idents else f"*_{n[1:]}"
            for f in where:
                score[f] += weight
                why[f].append(f"defines `{shown}`")
                def_lines.setdefault(f, first_line[(n, f)])
        for pattern, where in msg_files.items():
            for f in where:
                score[f] += c.message_weight / len(where)
                why[f].append(f"has the message '{pattern[:40]}'")
        self._path_prior(score, files, clues)
        for f in list(score):
            if _TEST.search(f):
                score[f] *= c.test_factor
            elif _DOCS.search(f):
                score[f] *= c.docs_factor
            elif not f.endswith(_CODE_EXT):
                score[f] *= c.other_ext_factor
            if f.endswith("/__init__.py"):
                score[f] *= c.init_file_factor
            if coverage and f not in coverage:
                # not confirmed: rank it as if it matched nothing, or unconfirmed files would
                # overtake the confirmed ones whose coverage is below 1
                score[f] *= c.coverage_floor
            if f in coverage:
                score[f] *= c.coverage_floor + (1 - c.coverage_floor) * coverage[f]
                if coverage[f] > 0:
                    why[f].append(f"mentions {coverage[f]:.0%} of the issue's names")
        return dict(score), def_lines, why

    def _path_prior(
        self, score: dict[str, float], files: tuple[str, ...], clues: IssueClues
    ) -> None:
        """Issue words that name path components ("latex", "napoleon", "junitxml"), weighted by
        how rare the component is in the repository: a prior over every source file."""
        c = self.config
        tf: dict[str, int] = defaultdict(int)
        for w in clues.words:
            tf[w] += 1
        if not tf:
            return
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
        for f, toks in token_sets.items():
            s = sum(math.log(n / df[t]) * math.log1p(tf[t]) for t in sorted(toks) if t in tf)
            if s > 0:
                score[f] += c.word_weight * s

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

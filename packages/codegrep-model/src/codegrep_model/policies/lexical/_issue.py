"""What a lexical search can take from an issue text: paths, traceback frames, identifiers,
dotted names and error messages. Pure functions; no repository access."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["IssueClues", "extract_clues"]

# Names too common to say anything about where a change belongs.
_STOP = frozenset(
    """
    self cls none true false print len str int float dict list set tuple bool object type range
    import from return class def lambda yield with assert raise try except finally else elif
    while for not and or is in pass break continue global nonlocal async await super isinstance
    issubclass getattr setattr hasattr open format repr sorted reversed enumerate zip map filter
    min max sum abs any all iter next hash id input vars dir help main test tests args kwargs
    value values key keys item items data result results name names path file files func
    function method module package error errors warning exception traceback python version numpy
    pandas np pd plt os sys re json time math copy typing self_ obj x y z a b c i j k n foo bar
    baz spam eggs example examples expected actual output input code issue bug fix
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_EXT = r"(?:py|pyi|pyx|pxd|c|h|cc|cpp|hpp|js|jsx|ts|tsx|go|rs|java|kt|rb|php|cs|swift|scala|m|"
_EXT += r"cfg|toml|ini|txt|rst|md|yml|yaml|json|html|css|jinja|j2|sh)"
_PATH = re.compile(rf"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.{_EXT})(?![\w])")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\w+))?')
_ERROR = re.compile(
    r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception|Warning|Exit|Interrupt))(?::\s*(.+))?$", re.M
)
_SPAN = re.compile(r"`([^`\n]{1,200})`")
_IDENT = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)")
# A call's name starts at the first letter or '_' of a run of word characters. Matched from the
# run's start only: tried at every letter, a 250 KB run with no '(' after it took minutes.
_CALL = re.compile(r"(?<![A-Za-z0-9_])[0-9]*([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+)?import\s+([\w., ()]+)", re.M)


TITLE_BOOST = 2.0


@dataclass
class IssueClues:
    paths: list[str] = field(default_factory=list)
    frames: list[tuple[str, int, str]] = field(default_factory=list)
    identifiers: dict[str, float] = field(default_factory=dict)
    dotted: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    word_set: frozenset[str] = frozenset()
    title_names: frozenset[str] = frozenset()  # identifiers of the issue's first line


def _fences(text: str) -> list[tuple[int, int, str]]:
    """Fenced code as (start, end, body): a '```', the rest of its line, then everything up to
    the next '```'. Found with `str.find`, once over the text: the regex this replaces
    (r"```[^\\n]*\\n(.*?)```") scanned to the end again from every '`' of a line of them.
    Once a fence finds no newline or no closing '```' after it, no later one can."""
    out: list[tuple[int, int, str]] = []
    pos = 0
    while (start := text.find("```", pos)) >= 0:
        newline = text.find("\n", start + 3)
        close = text.find("```", newline + 1) if newline >= 0 else -1
        if close < 0:
            break
        out.append((start, close + 3, text[newline + 1 : close]))
        pos = close + 3
    return out


def _without(text: str, fences: list[tuple[int, int, str]]) -> str:
    """`text` with each fence replaced by one space."""
    parts: list[str] = []
    pos = 0
    for start, end, _ in fences:
        parts += [text[pos:start], " "]
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _is_name(tok: str) -> bool:
    if len(tok) < 3 or tok.lower() in _STOP or tok.isdigit():
        return False
    # prose words in code spans: only keep tokens shaped like code
    return bool(
        "_" in tok
        or any(c.isupper() for c in tok[1:])
        or (tok[0].isupper() and len(tok) > 3)
        or tok.islower()
    )


def _literal(message: str) -> str | None:
    """The longest stretch of an error message that is likely verbatim in the source (format
    placeholders and quoted values differ between the message and the code)."""
    parts = re.split(r"'[^']*'|\"[^\"]*\"|\{[^}]*\}|%\w|\b\d[\w.]*\b|<[^>]*>|[`()\[\]]", message)
    best = max((p.strip(" .,:;-") for p in parts), key=len, default="")
    return best if len(best) >= 12 and " " in best else None


def extract_clues(text: str) -> IssueClues:
    clues = IssueClues()
    for m in _FRAME.finditer(text):
        clues.frames.append((m.group(1).replace("\\", "/"), int(m.group(2)), m.group(3) or ""))
    frame_paths = {f for f, _, _ in clues.frames}
    for m in _PATH.finditer(text):
        p = m.group(1).strip(".")
        if p not in clues.paths and p not in frame_paths and not p.startswith("http"):
            clues.paths.append(p)
    for m in _ERROR.finditer(text):
        if m.group(2):
            lit = _literal(m.group(2))
            if lit and lit not in clues.messages:
                clues.messages.append(lit)

    fences = _fences(text)
    code = [body for _, _, body in fences]
    prose = _without(text, fences)
    spans = [m.group(1) for m in _SPAN.finditer(prose)]
    code += [ln for ln in text.splitlines() if ln.lstrip().startswith((">>>", "In ["))]
    weights: dict[str, float] = {}

    def add(tok: str, w: float) -> None:
        for part in tok.split("."):
            if _is_name(part):
                weights[part] = weights.get(part, 0.0) + w
        parts = tok.split(".")
        if len(parts) > 1 and tok not in clues.dotted and all(p.isidentifier() for p in parts):
            clues.dotted.append(tok)

    for span in spans:
        for m in _IDENT.finditer(span):
            add(m.group(1), 1.5)
    for block in code:
        for m in _CALL.finditer(block):
            add(m.group(1), 1.0)
        for m in _IMPORT.finditer(block):
            if m.group(1):
                add(m.group(1), 0.5)
            for name in re.split(r"[,\s()]+", m.group(2)):
                if name and name != "as":
                    add(name, 1.5)
        for m in _IDENT.finditer(block):
            add(m.group(1), 0.3)
    for _, _, fn in clues.frames:
        if fn and fn != "<module>":
            add(fn, 1.0)
    for m in _IDENT.finditer(prose):
        tok = m.group(1)
        # in prose only code-shaped tokens count: snake_case, CamelCase, dotted
        if "_" in tok or "." in tok or (any(c.isupper() for c in tok[1:]) and tok[0].isalpha()):
            add(tok, 0.7)
    # the title usually names the thing that is broken
    title = text.strip().splitlines()[0] if text.strip() else ""
    in_title = set()
    for m in _IDENT.finditer(title):
        for part in m.group(1).split("."):
            if part in weights:
                weights[part] *= TITLE_BOOST
                in_title.add(part)
    clues.title_names = frozenset(in_title)
    clues.identifiers = dict(sorted(weights.items(), key=lambda kv: -kv[1]))
    clues.words = [
        w.lower() for w in re.findall(r"[A-Za-z][a-z]{3,}", prose) if w.lower() not in _STOP
    ]
    clues.word_set = frozenset(clues.words) | {n.lower() for n in clues.identifiers}
    return clues

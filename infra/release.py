#!/usr/bin/env python3
"""Build and check every package of the workspace for a release; tag it; never upload.

    python infra/release.py --dry-run [--allow-unreleased]   # build, check, print the plan
    python infra/release.py                                  # the same, then create the tags
    uv publish DIST/<file> ...                               # the upload, by hand (printed)

For each workspace member (packages/*, apps/*) it builds the sdist and the wheel
(`uv build --package NAME --no-sources --out-dir DIST`) and checks that

- the version in pyproject.toml (its one source) parses, and CHANGELOG.md has a `## <version>`
  entry that is not marked unreleased, and no `## Unreleased` section holding entries;
- the tag `<distribution>-v<version>` does not exist yet (or already points at HEAD);
- every requirement of a sibling (dependencies and extras) has the project's range,
  `>=0.Y.Z,<0.(Y+1)` in 0.x and `>=X.Y,<X+1` from 1.0 on, and admits the sibling's version;
- the wheel's METADATA carries those ranges in Requires-Dist, and its long description (the
  README) holds no relative link, which would point at a file that is not in the wheel.

Then it writes DIST/RELEASE-NOTES.md (a compatibility matrix: each package's version and the
versions of the siblings it was built and tested with, then each package's CHANGELOG entry),
prints the upload order (dependencies first) and the tags. `--dry-run` stops there; otherwise
it creates the annotated tags on HEAD, which needs a clean working tree. Uploading is left to
the printed `uv publish` commands. Exit status: 0 ready, 1 a check failed, 2 bad usage.

Standard library only (Python 3.11+): it runs before any environment exists.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# --- versions, specifiers, requirements (a small subset of PEP 440 / PEP 508) ----------------

_VERSION = re.compile(
    r"^v?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|rc|alpha|beta|c)[-_.]?(?P<pre_n>\d*))?"
    r"(?:[-_.]?post[-_.]?(?P<post>\d*))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev>\d*))?$",
    re.IGNORECASE,
)
_PRE_ORDER = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2}


@dataclass(frozen=True)
class Version:
    text: str
    release: tuple[int, ...]
    pre: tuple[int, int] | None
    post: int | None
    dev: int | None

    @classmethod
    def parse(cls, text: str) -> Version:
        m = _VERSION.match(text.strip())
        if not m:
            raise ValueError(f"not a version: {text!r}")
        pre = None
        if m.group("pre"):
            pre = (_PRE_ORDER[m.group("pre").lower()], int(m.group("pre_n") or 0))
        post = int(m.group("post") or 0) if m.group("post") is not None else None
        dev = int(m.group("dev") or 0) if m.group("dev") is not None else None
        release = tuple(int(p) for p in m.group("release").split("."))
        return cls(text.strip(), release, pre, post, dev)

    @property
    def major(self) -> int:
        return self.release[0]

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) > 1 else 0

    def _key(self) -> tuple[object, ...]:
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        if self.pre is not None:
            pre: tuple[int, int] = self.pre
        elif self.dev is not None and self.post is None:
            pre = (-1, 0)  # 1.0.dev1 < 1.0a1
        else:
            pre = (3, 0)
        post = -1 if self.post is None else self.post
        dev = float("inf") if self.dev is None else self.dev
        return (tuple(release), pre, post, dev)

    def __lt__(self, other: Version) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Version) -> bool:
        return self._key() <= other._key()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.text


def next_breaking(version: Version) -> Version:
    """The first release that may break `version`: the next minor in 0.x, else the next major."""
    if version.major == 0:
        return Version.parse(f"0.{version.minor + 1}")
    return Version.parse(f"{version.major + 1}")


def range_for(version: Version) -> str:
    """The range a sibling at `version` is required with, by the project's rule."""
    if version.major == 0:
        low = ".".join(str(p) for p in (*version.release, 0, 0)[:3])
    else:
        low = f"{version.major}.{version.minor}"
    return f">={low},<{next_breaking(version)}"


_CLAUSE = re.compile(r"^\s*(===|~=|==|!=|<=|>=|<|>)\s*([^\s,;]+)\s*$")


def parse_specifier(text: str) -> list[tuple[str, str]]:
    """'>=0.1.0,<0.2' -> [('>=', '0.1.0'), ('<', '0.2')]; raises ValueError."""
    clauses = []
    for part in text.split(","):
        if not part.strip():
            continue
        m = _CLAUSE.match(part)
        if not m:
            raise ValueError(f"cannot read the version clause {part.strip()!r}")
        clauses.append((m.group(1), m.group(2)))
    return clauses


def specifier_contains(clauses: list[tuple[str, str]], version: Version) -> bool:
    for op, text in clauses:
        if text.endswith(".*"):
            prefix = tuple(int(p) for p in text[:-2].split("."))
            matches = version.release[: len(prefix)] == prefix
            if (op == "==") != matches:
                return False
            continue
        bound = Version.parse(text)
        ok = {
            ">=": bound <= version,
            ">": bound < version,
            "<=": version <= bound,
            "<": version < bound,
            "==": version == bound,
            "===": version.text == bound.text,
            "!=": version != bound,
            "~=": bound <= version
            and version.release[: max(len(bound.release) - 1, 1)]
            == bound.release[: max(len(bound.release) - 1, 1)],
        }[op]
        if not ok:
            return False
    return True


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*"
    r"(?:\[(?P<extras>[^\]]*)\])?\s*"
    r"(?:@\s*(?P<url>[^;\s]+)\s*|\(?(?P<spec>[^;()]*)\)?)?\s*"
    r"(?:;\s*(?P<marker>.*))?$"
)


@dataclass(frozen=True)
class Requirement:
    text: str
    name: str
    extras: tuple[str, ...]
    spec: str  # as written, e.g. ">=0.1.0,<0.2" ("" when none)
    url: str | None
    marker: str

    @classmethod
    def parse(cls, text: str) -> Requirement:
        m = _REQUIREMENT.match(text)
        if not m:
            raise ValueError(f"cannot read the requirement {text!r}")
        extras = tuple(e.strip() for e in (m.group("extras") or "").split(",") if e.strip())
        return cls(
            text=text,
            name=canonical(m.group("name")),
            extras=extras,
            spec=(m.group("spec") or "").strip(),
            url=m.group("url"),
            marker=(m.group("marker") or "").strip(),
        )

    def clauses(self) -> frozenset[tuple[str, Version | str]]:
        """The specifier as a set: order and spelling (0.2 / 0.2.0) do not matter."""
        return frozenset(
            (op, v if v.endswith("*") else Version.parse(v)) for op, v in parse_specifier(self.spec)
        )

    def extra(self) -> str | None:
        """The extra a Requires-Dist line belongs to (`extra == 'x'` in its marker)."""
        m = re.search(r"""extra\s*==\s*['"]([^'"]+)['"]""", self.marker)
        return canonical(m.group(1)) if m else None


# --- the workspace -----------------------------------------------------------------------------


@dataclass
class Member:
    name: str  # the distribution name as written in pyproject.toml
    version: str
    path: Path
    # (extra or None, requirement) for every dependency, extras included
    requirements: list[tuple[str | None, Requirement]]
    scripts: list[str]

    @property
    def key(self) -> str:
        return canonical(self.name)

    @property
    def tag(self) -> str:
        return f"{self.name}-v{self.version}"

    @property
    def file_stem(self) -> str:
        return re.sub(r"[-_.]+", "_", self.name).lower()


def discover(root: Path) -> list[Member]:
    """The workspace members named by the root pyproject's [tool.uv.workspace]."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    workspace = config.get("tool", {}).get("uv", {}).get("workspace", {})
    excluded = {p.resolve() for pattern in workspace.get("exclude", []) for p in root.glob(pattern)}
    members = []
    for pattern in workspace.get("members", []):
        for folder in sorted(root.glob(pattern)):
            pyproject = folder / "pyproject.toml"
            if folder.resolve() in excluded or not pyproject.is_file():
                continue
            project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
            if "version" not in project:
                raise SystemExit(f"{pyproject}: no static [project] version (the one source)")
            reqs: list[tuple[str | None, Requirement]] = [
                (None, Requirement.parse(t)) for t in project.get("dependencies", [])
            ]
            for extra, texts in project.get("optional-dependencies", {}).items():
                reqs += [(canonical(extra), Requirement.parse(t)) for t in texts]
            members.append(
                Member(
                    name=project["name"],
                    version=str(project["version"]),
                    path=folder,
                    requirements=reqs,
                    scripts=sorted(project.get("scripts", {})),
                )
            )
    return members


def sibling_requirements(
    member: Member, by_key: dict[str, Member]
) -> list[tuple[str | None, Requirement]]:
    return [(x, r) for x, r in member.requirements if r.name in by_key and r.name != member.key]


def upload_order(members: list[Member]) -> list[Member]:
    """A topological order of the sibling graph, dependencies first; ties by name."""
    by_key = {m.key: m for m in members}
    needs = {m.key: {r.name for _, r in sibling_requirements(m, by_key)} for m in members}
    order: list[Member] = []
    done: set[str] = set()
    while len(order) < len(members):
        ready = sorted(k for k in needs if k not in done and needs[k] <= done)
        if not ready:
            cycle = sorted(k for k in needs if k not in done)
            raise SystemExit(f"the sibling requirements form a cycle among: {', '.join(cycle)}")
        for key in ready:
            order.append(by_key[key])
            done.add(key)
    return order


def closure(member: Member, by_key: dict[str, Member]) -> dict[str, str]:
    """Every sibling `member` needs, directly or through others: key -> how ('direct', 'via x')."""
    how: dict[str, str] = {}
    todo = [
        (r.name, "direct" if x is None else f"extra {x}")
        for x, r in sibling_requirements(member, by_key)
    ]
    while todo:
        key, why = todo.pop(0)
        if key in how or key == member.key:
            continue
        how[key] = why
        todo += [
            (r.name, f"via {by_key[key].name}")
            for x, r in sibling_requirements(by_key[key], by_key)
            if x is None
        ]
    return how


# --- checks ------------------------------------------------------------------------------------


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def problem(self, message: str, *, soft: bool = False) -> None:
        (self.warnings if soft else self.errors).append(message)


_HEADING = re.compile(r"^##\s+(?P<title>.+?)\s*#*\s*$", re.MULTILINE)


def changelog_sections(text: str) -> list[tuple[str, str]]:
    """(title, body) for each `## ` section of a changelog."""
    matches = list(_HEADING.finditer(text))
    sections = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections.append((m.group("title"), text[m.end() : end].strip("\n")))
    return sections


def _is_unreleased(title: str) -> bool:
    return title.strip("[] ").lower() == "unreleased"


def _is_entry_for(title: str, version: str) -> bool:
    return re.match(rf"^\[?v?{re.escape(version)}\]?(?=$|[\s(—–-])", title) is not None


def changelog_entry(member: Member) -> tuple[str, str] | None:
    path = member.path / "CHANGELOG.md"
    if not path.is_file():
        return None
    for title, body in changelog_sections(path.read_text(encoding="utf-8")):
        if _is_entry_for(title, member.version):
            return title, body
    return None


def unreleased_entries(member: Member) -> str:
    path = member.path / "CHANGELOG.md"
    if not path.is_file():
        return ""
    sections = changelog_sections(path.read_text(encoding="utf-8"))
    return "\n\n".join(body.strip() for title, body in sections if _is_unreleased(title))


def check_changelog(member: Member, report: Report, *, allow_unreleased: bool) -> None:
    where = f"{member.name} {member.version}"
    try:
        Version.parse(member.version)
    except ValueError as exc:
        report.problem(f"{where}: {exc}")
    path = member.path / "CHANGELOG.md"
    if not path.is_file():
        report.problem(f"{where}: no CHANGELOG.md")
        return
    sections = changelog_sections(path.read_text(encoding="utf-8"))
    for title, body in sections:
        if _is_unreleased(title) and body.strip():
            entries = sum(1 for ln in body.splitlines() if re.match(r"^\s*[-*+] ", ln)) or 1
            report.problem(
                f"{where}: CHANGELOG.md `## {title}` holds {entries} entr"
                f"{'y' if entries == 1 else 'ies'} that no version carries: unreleased changes "
                "(before releasing, move them under the `## <version>` entry of the version "
                "being released, a new one if this version is out already)",
                soft=allow_unreleased,
            )
    entry = changelog_entry(member)
    if entry is None:
        report.problem(f"{where}: CHANGELOG.md has no `## {member.version}` entry")
    elif "unreleased" in entry[0].lower():
        report.problem(
            f"{where}: CHANGELOG.md `## {entry[0]}` is still marked unreleased",
            soft=allow_unreleased,
        )


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def head_commit(root: Path) -> str | None:
    out = git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    return out.stdout.strip() if out.returncode == 0 else None


def check_tag(member: Member, root: Path, head: str | None, report: Report) -> bool:
    """True when the tag still has to be made."""
    out = git(root, "rev-parse", "--verify", "-q", f"refs/tags/{member.tag}^{{commit}}")
    if out.returncode != 0:
        return True
    at = out.stdout.strip()
    if head is not None and at == head:
        report.notes.append(f"{member.tag} already exists at HEAD; it is kept")
        return False
    report.problem(
        f"{member.name} {member.version}: the tag {member.tag} already exists at {at[:12]}, "
        "not HEAD: this version was released before (bump the version)"
    )
    return False


def check_sibling_ranges(member: Member, by_key: dict[str, Member], report: Report) -> None:
    for extra, req in sibling_requirements(member, by_key):
        sibling = by_key[req.name]
        where = f"{member.name}: {req.text!r}" + (f" (extra {extra})" if extra else "")
        want = range_for(Version.parse(sibling.version))
        if req.url is not None:
            report.problem(f"{where}: a sibling must be required by version, not by URL")
            continue
        if not req.spec:
            report.problem(f"{where}: the sibling {sibling.name} has no version range ({want})")
            continue
        try:
            clauses = parse_specifier(req.spec)
            lows = [Version.parse(v) for op, v in clauses if op == ">="]
            highs = [Version.parse(v) for op, v in clauses if op == "<"]
        except ValueError as exc:
            report.problem(f"{where}: {exc}")
            continue
        if len(clauses) != 2 or len(lows) != 1 or len(highs) != 1:
            report.problem(f"{where}: not of the form >=LOW,<NEXT-BREAKING (e.g. {want})")
            continue
        if highs[0] != next_breaking(lows[0]):
            report.problem(
                f"{where}: the upper bound should be <{next_breaking(lows[0])}, the first "
                f"release that may break {lows[0]} (range rule: {range_for(lows[0])})"
            )
        if not specifier_contains(clauses, Version.parse(sibling.version)):
            report.problem(
                f"{where}: rejects {sibling.name} {sibling.version}, the version it is built "
                f"and tested with (e.g. {want})"
            )


_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[`~]*\s*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LINKS = [
    re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?(?P<target>[^)\s>]*)>?(?:\s+[^)]*)?\)"),
    re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(?P<target>\S+?)>?(?:\s|$)", re.MULTILINE),
    re.compile(r"""\b(?:href|src)\s*=\s*["'](?P<target>[^"']*)["']""", re.IGNORECASE),
]
_ABSOLUTE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//|#)")


def relative_links(markdown: str) -> list[tuple[int, str]]:
    """(line, target) of every link or image whose target is a relative path.

    Such a link works in the repository but not on the package index or in the wheel, whose
    long description is the README alone. Code (fenced or inline) and HTML comments are not
    scanned; `#anchors` within the same document are fine.
    """

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    text = _COMMENT.sub(blank, markdown)
    text = _FENCED.sub(blank, text)
    text = _INLINE_CODE.sub(blank, text)
    found = []
    for pattern in _LINKS:
        for m in pattern.finditer(text):
            target = m.group("target")
            if target and not _ABSOLUTE.match(target):
                found.append((text.count("\n", 0, m.start("target")) + 1, target))
    return sorted(set(found))


def read_wheel_metadata(wheel: Path) -> tuple[dict[str, list[str]], str]:
    """The METADATA headers (name -> values) and the long description of a wheel."""
    with zipfile.ZipFile(wheel) as zf:
        names = [
            n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
        ]
        if len(names) != 1:
            raise ValueError(f"{wheel.name}: expected one .dist-info/METADATA, found {names}")
        raw = zf.read(names[0]).decode("utf-8")
    message = HeaderParser().parsestr(raw)
    headers: dict[str, list[str]] = {}
    for key, value in message.items():
        headers.setdefault(key.lower(), []).append(str(value))
    body = message.get_payload()
    description = body if isinstance(body, str) and body.strip() else ""
    if not description and "description" in headers:
        description = headers["description"][0]
    return headers, description


def find_artifacts(member: Member, dist: Path) -> tuple[Path | None, Path | None]:
    wheels = sorted(dist.glob(f"{member.file_stem}-{member.version}-*.whl"))
    sdist = dist / f"{member.file_stem}-{member.version}.tar.gz"
    return (wheels[-1] if wheels else None), (sdist if sdist.is_file() else None)


def check_wheel(member: Member, wheel: Path, by_key: dict[str, Member], report: Report) -> None:
    where = f"{member.name} {member.version}: {wheel.name}"
    try:
        headers, description = read_wheel_metadata(wheel)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        report.problem(f"{where}: unreadable ({exc})")
        return
    if canonical(headers.get("name", [""])[0]) != member.key:
        report.problem(f"{where}: METADATA names {headers.get('name')}")
    if headers.get("version", [""])[0] != member.version:
        report.problem(
            f"{where}: METADATA version {headers.get('version')}, pyproject {member.version}"
        )
    requires = [Requirement.parse(t) for t in headers.get("requires-dist", [])]
    for extra, req in sibling_requirements(member, by_key):
        shipped = [r for r in requires if r.name == req.name and r.extra() == extra]
        label = f"{req.name}" + (f" (extra {extra})" if extra else "")
        if not shipped:
            report.problem(f"{where}: Requires-Dist has no {label}")
            continue
        try:
            same = any(r.clauses() == req.clauses() for r in shipped)
        except ValueError as exc:
            report.problem(f"{where}: Requires-Dist {label}: {exc}")
            continue
        if not same:
            report.problem(
                f"{where}: Requires-Dist {label} is {[r.spec for r in shipped]}, "
                f"pyproject.toml says {req.spec!r}"
            )
    for r in requires:
        if r.name in by_key and not r.spec:
            report.problem(f"{where}: Requires-Dist {r.text!r} has no version range")
    if not description.strip():
        report.problem(f"{where}: no long description (the README) in METADATA")
    for line, target in relative_links(description):
        report.problem(
            f"{where}: README line {line} links to {target!r}, a relative link that is broken "
            "on the package index and in the wheel (use plain text, an #anchor or a full URL)"
        )


# --- notes, build, main ------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compatibility_matrix(order: list[Member]) -> str:
    by_key = {m.key: m for m in order}
    needed = {key for m in order for key in closure(m, by_key)}
    columns = [m for m in order if m.key in needed]  # the siblings someone is built against
    head = ["package", "version", *[c.name for c in columns]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in order:
        needs = closure(m, by_key)
        direct: dict[str, tuple[str | None, Requirement]] = {}
        for extra, req in sibling_requirements(m, by_key):
            if req.name not in direct or direct[req.name][0] is not None:
                direct[req.name] = (extra, req)  # a plain dependency wins over an extra's
        cells = []
        for c in columns:
            if c.key == m.key:
                cells.append("·")
            elif c.key not in needs:
                cells.append("—")
            elif c.key in direct:
                extra, req = direct[c.key]
                cells.append(f"{c.version} (`{req.spec}`" + (f", extra {extra})" if extra else ")"))
            else:
                cells.append(f"{c.version} ({needs[c.key]})")
        lines.append("| " + " | ".join([m.name, m.version, *cells]) + " |")
    return "\n".join(lines)


def render_notes(order: list[Member], dist: Path, head: str | None, *, with_changelog: bool) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    parts = [
        f"# Release notes ({when}, commit {head[:12] if head else 'none'})",
        "",
        "Each row: a package at the version released here, and the version of each sibling it "
        "was built and tested with in the workspace at this commit (its required range in "
        "backticks; `via x`: needed through x; `—`: not needed).",
        "",
        compatibility_matrix(order),
        "",
        "## Upload order (dependencies first) and tags",
        "",
    ]
    for i, m in enumerate(order, 1):
        wheel, sdist = find_artifacts(m, dist)
        files = ", ".join(
            f"`{p.name}` (sha256 {_sha256(p)[:16]}…)" for p in (wheel, sdist) if p is not None
        )
        parts.append(f"{i}. {m.name} {m.version}, tag `{m.tag}`: {files or 'not built'}")
    if with_changelog:
        for m in order:
            entry = changelog_entry(m)
            parts += ["", f"## {m.name} {m.version}", ""]
            pending = unreleased_entries(m)
            if pending:
                parts += ["Not yet under a version heading (`## Unreleased`):", "", pending, ""]
            parts.append(entry[1].strip() if entry and entry[1].strip() else "(no entry)")
    return "\n".join(parts) + "\n"


def build(member: Member, root: Path, dist: Path) -> bool:
    # --no-sources: built the way an installer from the index would, without workspace paths.
    cmd = ["uv", "build", "--package", member.name, "--no-sources", "--out-dir", str(dist)]
    print("$ " + " ".join(cmd), flush=True)
    out = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout + out.stderr, file=sys.stderr)
    return out.returncode == 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="release.py",
        description="Build and check every package for a release, write the notes, tag; "
        "never upload.",
    )
    ap.add_argument("--dry-run", action="store_true", help="check and print; create no tag")
    ap.add_argument(
        "--allow-unreleased",
        action="store_true",
        help="report unreleased CHANGELOG sections as warnings (dry runs during development)",
    )
    ap.add_argument("--root", type=Path, default=ROOT, help="the workspace (default: this one)")
    ap.add_argument("--dist", type=Path, help="output folder (default: ROOT/dist)")
    ap.add_argument("--no-build", action="store_true", help="check the files already in --dist")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    dist = (args.dist or root / "dist").resolve()
    if args.allow_unreleased and not args.dry_run:
        print("--allow-unreleased is for dry runs only", file=sys.stderr)
        return 2

    members = discover(root)
    if not members:
        print(f"{root}: no workspace members", file=sys.stderr)
        return 2
    by_key = {m.key: m for m in members}
    order = upload_order(members)
    report = Report()
    head = head_commit(root)
    if head is None:
        report.problem(f"{root}: not a git repository with a commit (tags need HEAD)")
    else:
        # Untracked files count: the sdist takes every file git does not ignore.
        dirty = git(root, "status", "--porcelain").stdout.strip()
        if dirty:
            report.problem(
                "the working tree has uncommitted changes: what is built is not what the tags "
                "point at (commit first)",
                soft=args.dry_run,
            )

    if not args.no_build:
        dist.mkdir(parents=True, exist_ok=True)
        for m in order:
            if not build(m, root, dist):
                report.problem(f"{m.name} {m.version}: `uv build` failed")

    to_tag = []
    for m in order:
        check_changelog(m, report, allow_unreleased=args.allow_unreleased)
        check_sibling_ranges(m, by_key, report)
        if head is not None and check_tag(m, root, head, report):
            to_tag.append(m)
        wheel, sdist = find_artifacts(m, dist)
        if wheel is None:
            report.problem(f"{m.name} {m.version}: no wheel in {dist}")
        else:
            check_wheel(m, wheel, by_key, report)
        if sdist is None:
            report.problem(f"{m.name} {m.version}: no sdist in {dist}")

    notes_path = dist / "RELEASE-NOTES.md"
    if dist.is_dir():
        notes = render_notes(order, dist, head, with_changelog=True)
        notes_path.write_text(notes, encoding="utf-8")
    print()
    print(render_notes(order, dist, head, with_changelog=False), end="")
    if dist.is_dir():
        print(f"\n(the notes with each package's CHANGELOG entry: {notes_path})")

    print("\n## Upload (not done by this tool), in this order:\n")
    for m in order:
        wheel, sdist = find_artifacts(m, dist)
        files = " ".join(str(p) for p in (wheel, sdist) if p is not None) or f"{dist}/?"
        print(f"uv publish --check-url https://pypi.org/simple/ {files}")
    print("\n## Tags" + (" (dry run: none created)" if args.dry_run else "") + ":\n")
    for m in order:
        state = "new" if m in to_tag else "exists"
        print(f"{m.tag}  ({state})")

    for note in report.notes:
        print(f"note: {note}")
    for warning in report.warnings:
        print(f"warning: {warning}")
    for error in report.errors:
        print(f"error: {error}")
    if report.errors:
        print(f"\n{len(report.errors)} problem(s): nothing tagged.")
        return 1
    if args.dry_run:
        print(f"\ndry run: {len(order)} package(s) ready; no tag created, nothing uploaded.")
        return 0
    for m in to_tag:
        entry = changelog_entry(m)
        message = f"{m.name} {m.version}\n\n{entry[1].strip() if entry else ''}\n"
        out = git(root, "tag", "-a", m.tag, "-m", message, head or "HEAD")
        if out.returncode != 0:
            print(f"error: git tag {m.tag}: {out.stderr.strip()}", file=sys.stderr)
            return 1
        print(f"tagged {m.tag}")
    print("\nPush the tags (git push origin --tags), then run the uv publish commands above.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

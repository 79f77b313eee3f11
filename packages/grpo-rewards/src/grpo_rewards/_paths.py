"""One path normalizer shared by every metric, so a prediction and a label meet in the same form.

Predictions come from agents that see a repository mounted somewhere (`/testbed/` in SWE-bench
images, `/workspace/<repo>__<version>/` in OpenHands V0, `/workspace/<repo>/` in V1, a clone under
`/tmp/testbed/<uuid>/` in CodeScout, `/repo/` or `/app/` in other sandboxes). Labels are
repository-relative. Normalizing both sides before set operations keeps a correct file from being
scored as a false positive because of its mount point. This module does not check that a path
exists: scoring never touches the disk.

codegrep-records owns the same rule (`codegrep_records.normalize_path`, `MOUNT_PREFIXES`); this
copy exists because grpo-rewards stays standard library only. A workspace test holds the two
equal, table and behaviour: change both or neither.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

__all__ = ["DEFAULT_MOUNT_PREFIXES", "normalize_path", "normalize_paths"]

# Each pattern matches a sandbox mount point at the start of an absolute path. `/workspace/`
# is followed by one directory (the checkout); a file directly under /workspace/ keeps its name.
# A leading `/repo/` or `/app/` is read as a mount too, so `/app/models.py` is `models.py`:
# a path with a leading slash is absolute, and these are the roots sandboxes use.
DEFAULT_MOUNT_PREFIXES: tuple[str, ...] = (
    r"/tmp/testbed/[^/]+/",
    r"/testbed/",
    r"/workspace/[^/]+/(?=.)",
    r"/workspace/",
    r"/repo/",
    r"/app/",
)


def _compile(prefixes: Iterable[str]) -> re.Pattern[str]:
    return re.compile("^(?:" + "|".join(f"(?:{p})" for p in prefixes) + ")")


_DEFAULT_RE = _compile(DEFAULT_MOUNT_PREFIXES)


def normalize_path(
    path: str,
    *,
    roots: Iterable[str] = (),
    mount_prefixes: Iterable[str] | None = None,
) -> str:
    """Return `path` relative to its repository root, in POSIX form.

    `roots` are absolute checkout folders known to the caller (stripped first, longest first);
    `mount_prefixes` are regular expressions for sandbox mount points (default:
    `DEFAULT_MOUNT_PREFIXES`). Backslashes become slashes, `./`, `//` and `a/../` collapse, and a
    leading `/` is dropped. An empty or `.` path normalizes to the empty string.

    >>> normalize_path("/workspace/django__django__3.0/django/db/models/base.py")
    'django/db/models/base.py'
    >>> normalize_path("./src\\\\pkg//mod.py")
    'src/pkg/mod.py'
    """
    text = path.strip().replace("\\", "/")
    for root in sorted(
        (r.replace("\\", "/").rstrip("/") + "/" for r in roots), key=len, reverse=True
    ):
        if text.startswith(root):
            text = text[len(root) :]
            break
    else:
        pattern = _DEFAULT_RE if mount_prefixes is None else _compile(mount_prefixes)
        text = pattern.sub("", text, count=1)
    if not text:
        return ""
    text = posixpath.normpath(text).lstrip("/")
    return "" if text == "." else text


def normalize_paths(
    paths: Iterable[str],
    *,
    roots: Iterable[str] = (),
    mount_prefixes: Iterable[str] | None = None,
) -> frozenset[str]:
    """Normalize every path and drop empties; duplicates collapse because the result is a set.

    A single string is refused rather than read as a set of one-character paths.
    """
    if isinstance(paths, str | bytes):
        raise TypeError(f"expected a collection of paths, got the single string {paths!r}")
    root_list = tuple(roots)
    prefix_list = None if mount_prefixes is None else tuple(mount_prefixes)
    out = {normalize_path(p, roots=root_list, mount_prefixes=prefix_list) for p in paths}
    out.discard("")
    return frozenset(out)

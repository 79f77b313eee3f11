"""The one HTML page every report is: data embedded as JSON, rendered in the browser by one
script, under a Content-Security-Policy that allows no request at all.

Every string of the data is untrusted (issue text, tool output, repository paths). It never
enters the HTML as markup: the JSON block is escaped so that nothing in it can end the script
element, and the script builds DOM nodes with `textContent` only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from codegrep_report.errors import ReportWriteError

__all__ = ["embed_json", "json_ready", "render_page", "write_page"]

_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)


def json_ready(value: object) -> object:
    """`value` with non-finite floats as None (JSON has no NaN) and tuples as lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [json_ready(v) for v in value]
    return value


def embed_json(value: object) -> str:
    """JSON text safe inside `<script type="application/json">`: `<`, `>`, `&`, U+2028 and
    U+2029 are written as escapes, so `</script>` or `<!--` in the data stays data."""
    try:  # the common case: already JSON-ready, and walking a big run twice costs seconds
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError):  # NaN or infinity, or a mapping/sequence json cannot write
        text = json.dumps(
            json_ready(value), ensure_ascii=False, allow_nan=False, separators=(",", ":")
        )
    return text.translate(_ESCAPE_TABLE)


def _asset(name: str) -> str:
    return resources.files("codegrep_report").joinpath("_assets", name).read_text("utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _attr(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def render_page(
    kind: str,
    title: str,
    payload: Mapping[str, object],
    blocks: Mapping[str, object] | None = None,
) -> str:
    """The whole self-contained HTML document of one report. `blocks`: more JSON, one
    `<script type="application/json" id="NAME">` each, which the page parses only when it
    needs them (a big run's rollout turns, per step)."""
    script = _asset("report.js")
    style = _asset("report.css")
    csp = (
        "default-src 'none'; "
        f"script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; "
        "img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )
    data = embed_json({"kind": kind, "title": title, **payload})
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_attr(csp)}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_attr(title)}</title>\n"
        f"<style>{style}</style>\n</head>\n<body>\n"
        "<noscript>This report is drawn by its inline script; allow it to run.</noscript>\n"
        '<main id="app"></main>\n'
        f'<script type="application/json" id="report-data">{data}</script>\n'
        + "".join(
            f'<script type="application/json" id="{_attr(name)}">{embed_json(value)}</script>\n'
            for name, value in (blocks or {}).items()
        )
        + f"<script>{script}</script>\n</body>\n</html>\n"
    )


def write_page(path: str | Path, html: str) -> Path:
    """Write `html` to `path` in one step (a temporary file beside it, then renamed), so a
    reader never sees half a report and a link planted at the name is replaced, not followed."""
    target = Path(path)
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise ReportWriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(html)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise ReportWriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target

"""The stock agent's prompt: the runner's own SWE-bench template, and the same template with the
injected section added.

The baseline of a downstream comparison is the unmodified agent, so its prompt is the runner's
template byte for byte. The treatment adds one Jinja block right after the issue (the closing
`</issue_description>` line and the blank line after it), where the paper's injected files
follow the issue the retriever read. The block prints the dataset row's `injection` column,
which `plan` fills with codegrep-gate's `render(files, "openhands")` (ending in a newline), and
one blank line; a row without injection renders exactly as the stock template. The block has no
newline after a tag, so it renders the same with or without Jinja's `trim_blocks`.

Pure text in, text out; reading and writing the template files is the CLI's (`template_cli`).
"""

from __future__ import annotations

import re

from swe_eval.errors import SweEvalError

__all__ = [
    "INJECTION_BLOCK",
    "StockTemplateError",
    "stock_template",
    "treatment_template",
]

INJECTION_BLOCK = (
    "{% if instance.injection is defined and instance.injection %}"
    "{{ instance.injection }}\n{% endif %}"
)
# the closing tag on its own line, then the blank line(s) after it
_ANCHOR = re.compile(r"^[ \t]*</issue_description>[ \t]*\n(?:[ \t]*\n)*", re.M)


class StockTemplateError(SweEvalError):
    """The runner's template has no single place for the injected section."""


def _anchor(template: str) -> re.Match[str]:
    found = list(_ANCHOR.finditer(template))
    if len(found) != 1:
        raise StockTemplateError(
            f"the runner's template has {len(found)} `</issue_description>` line(s), not one: "
            "no single place for the injected section (has the runner changed its template?)"
        )
    if "candidate_files" in template or "instance.injection" in template:
        raise StockTemplateError(
            "the template already reads candidate_files or injection: it is not the runner's "
            "stock template"
        )
    return found[0]


def stock_template(template: str) -> str:
    """The baseline's template: the runner's, unchanged (checked to have the anchor, so the
    baseline and the treatment fail together on a template the treatment cannot use)."""
    _anchor(template)
    return template


def treatment_template(template: str) -> str:
    """The runner's template with the injected section after the issue, and nothing else."""
    at = _anchor(template).end()
    return template[:at] + INJECTION_BLOCK + template[at:]

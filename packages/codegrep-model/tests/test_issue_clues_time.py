"""Issue text is untrusted and up to 256 KiB: reading clues from it takes time linear in it."""

from __future__ import annotations

import json
import subprocess
import sys

from codegrep_model.policies.lexical._issue import extract_clues

# Texts that made a regex start over at every character: a call name tried at every letter of
# a long run of word characters with no '(' after it, a fence tried at every '`' of a line of
# them. 250 KB each, under the issue limit.
_SCRIPT = """
import json, sys, time
from codegrep_model.policies.lexical._issue import extract_clues
out = []
for text in json.loads(sys.stdin.read()):
    start = time.perf_counter()
    extract_clues(text)
    out.append(time.perf_counter() - start)
print(json.dumps(out))
"""
_HOSTILE = [
    "```\n" + "a" * 250_000 + "\n```",
    "`" * 250_000,
    "```python\n" + "9a" * 125_000 + "\n```",
]


def test_clues_of_a_hostile_issue_take_linear_time() -> None:
    # In a child with a time limit: on the old expressions this takes minutes.
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT], input=json.dumps(_HOSTILE),
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    for text, seconds in zip(_HOSTILE, json.loads(proc.stdout), strict=True):
        assert seconds < 5.0, (text[:20], seconds)


def test_fences_and_calls_read_as_before() -> None:
    text = (
        "Calling `Session.send()` fails:\n```py\nresp = get_adapter(url)(x)\n9to_text(y)\n```\n"
        "and ``` inline ``` stays prose; then ```\nimport os.path\nload_config(p)\n``` end ```"
    )
    clues = extract_clues(text)
    # the calls of both fenced blocks, a name after digits from its first letter
    assert {"get_adapter", "to_text", "load_config"} <= set(clues.identifiers)
    assert "os.path" in clues.dotted
    # the inline ``` ... ``` opens a fence that runs to the next line's '```' (as before)
    assert "Session.send" in clues.dotted

"""Token length l(f) of a piece of reasoning, without a model hub.

catm counts tokens with a regular expression shaped like the pre-tokenizer of the GPT-4 family
(`cl100k_base`): runs of up to 8 ASCII letters, up to 3 digits, up to 3 punctuation marks, and one
token per non-ASCII letter (CJK text is roughly one token per character in those vocabularies).

Why not a real BPE: l(f) enters the weights only as l(f)/β with β the corpus median of the same
counts, so any tokenizer that is a near-constant multiple of another gives the same weights. What
matters is that counts are monotone in text length and comparable across files, offline and fast
(stage 1 must do >=500 trajectories/s/core). tiktoken downloads its vocabulary on first use and
`tokenizers` needs a tokenizer.json from a hub, neither of which this toolkit may assume.
The README reports how the count tracks a real tokenizer's `completion_tokens` on the shared data.
"""

from __future__ import annotations

import re

TOKENIZER_NAME = "regex-cl100k-approx-v1"

_TOKEN = re.compile(r"[A-Za-z]{1,8}|\d{1,3}|[^\sA-Za-z\d\w]{1,3}|[^\W\d_A-Za-z]|_+")


def count_tokens(text: str) -> int:
    """Approximate BPE token count of `text` (0 for empty or whitespace-only text)."""
    if not text:
        return 0
    return len(_TOKEN.findall(text))

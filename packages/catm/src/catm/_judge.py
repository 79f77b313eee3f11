"""Stage 2: an LLM judge over any OpenAI-compatible chat endpoint (vLLM, a hosted API).

The judge reads the issue, the file path and the agent's post-reasoning, and answers RELEVANT or
NOT RELEVANT. The bias is conservative: an answer that cannot be parsed, or that says both, counts
as RELEVANT. Every parsed answer is stored in an SQLite cache keyed by (model, prompt), committed
as it arrives, so a rerun after a kill only asks what was not answered yet.

Infrastructure failures (connection refused, timeouts, HTTP 429/5xx, a body that is not a chat
completion) are retried with exponential backoff; when retries run out the item is reported as
JUDGE_FAILED, kept like an ambiguous answer, counted apart, and not cached so the next run retries.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

import httpx
import msgspec

from catm._records import Verdict
from catm.errors import JudgeError

# A closed block, or one cut off by max_tokens: deliberation either way, never the verdict.
_THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_NEGATIVE = re.compile(r"\b(?:NOT[\s_-]*RELEVANT|IRRELEVANT)\b", re.IGNORECASE)
_POSITIVE = re.compile(r"\bRELEVANT\b", re.IGNORECASE)
_RETRY_STATUS = frozenset({408, 409, 425, 429})  # and every 5xx


def default_template() -> str:
    """The judge prompt shipped with catm (`catm/prompts/judge.md`)."""
    return resources.files("catm").joinpath("prompts/judge.md").read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """One (instance, file) question for the judge."""

    instance_id: str
    path: str
    issue: str
    reasoning: str


@dataclass(frozen=True, slots=True)
class JudgeResult:
    verdict: Verdict
    answer: str  # first line of the model's answer, or the failure reason
    cached: bool = False


class Judge(Protocol):
    """What the pipeline needs from a judge; `NoJudge` and `OpenAIJudge` implement it."""

    @property
    def name(self) -> str: ...

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        on_result: Callable[[JudgeResult], None] | None = None,
    ) -> list[JudgeResult]: ...


_UNJUDGED = JudgeResult(Verdict.UNJUDGED, "")


class NoJudge:
    """`--judge none`: every mined file is kept and marked UNJUDGED."""

    name = "none"

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        on_result: Callable[[JudgeResult], None] | None = None,
    ) -> list[JudgeResult]:
        results = [_UNJUDGED] * len(requests)  # one shared frozen result: no per-file objects
        if on_result is not None:
            for result in results:
                on_result(result)
        return results


def parse_verdict(answer: str) -> tuple[Verdict, bool]:
    """Map a judge answer to a verdict; the bool says whether it was unambiguous.

    NOT RELEVANT wins only when it is the only verdict in the answer; anything else, including no
    verdict at all, is RELEVANT (the paper's conservative bias).
    """
    text = _THINK_BLOCK.sub("", answer)
    negatives = len(_NEGATIVE.findall(text))
    positives = len(_POSITIVE.findall(_NEGATIVE.sub(" ", text)))
    if negatives and not positives:
        return Verdict.NOT_RELEVANT, True
    if positives and not negatives:
        return Verdict.RELEVANT, True
    return Verdict.RELEVANT, False


def render_prompt(template: str, request: JudgeRequest, issue_chars: int = 4000) -> str:
    issue = request.issue if len(request.issue) <= issue_chars else request.issue[:issue_chars]
    return template.format(path=request.path, issue=issue, reasoning=request.reasoning)


class JudgeCache:
    """Answers keyed by sha256(model, prompt) in one SQLite file; safe to kill at any point."""

    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path))
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS answers "
                "(key TEXT PRIMARY KEY, model TEXT, verdict TEXT, answer TEXT)"
            )
            self._db.commit()
            # Another tool's SQLite file may have a table of that name: fail here, not mid-run.
            self._db.execute("SELECT key, model, verdict, answer FROM answers LIMIT 0")
        except (sqlite3.Error, OSError) as exc:
            raise JudgeError(f"cannot open judge cache {path}: {exc}") from exc

    @staticmethod
    def key(model: str, prompt: str) -> str:
        return hashlib.sha256(f"{model}\x00{prompt}".encode()).hexdigest()

    def get(self, key: str) -> JudgeResult | None:
        row = self._db.execute(
            "SELECT verdict, answer FROM answers WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        try:
            verdict = Verdict(row[0])
        except ValueError:
            return None  # an unknown verdict (hand-edited or newer cache): ask again
        return JudgeResult(verdict, str(row[1] or ""), cached=True)

    def put(self, key: str, model: str, result: JudgeResult) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)",
            (key, model, result.verdict.value, result.answer),
        )
        self._db.commit()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        self._db.close()


class _ChatMessage(msgspec.Struct):
    content: str | None = None


class _ChatChoice(msgspec.Struct):
    message: _ChatMessage


class _ChatCompletion(msgspec.Struct):
    choices: list[_ChatChoice]


_COMPLETION = msgspec.json.Decoder(_ChatCompletion)


class _Model(msgspec.Struct):
    id: str


class _ModelList(msgspec.Struct):
    data: list[_Model]


_MODELS = msgspec.json.Decoder(_ModelList)


def _model_ids(response: httpx.Response) -> list[str] | None:
    """The model ids of an OpenAI-style `GET /models` answer, or None if it is not one."""
    try:
        return [m.id for m in _MODELS.decode(response.content).data]
    except (msgspec.DecodeError, RecursionError):
        return None


def _snippet(response: httpx.Response) -> str:
    text = " ".join(response.text.split())
    return (text[:160] + "...") if len(text) > 160 else (text or "(empty body)")


def _refused(root: str, response: httpx.Response) -> str:
    return (
        f"judge endpoint {root} refused the request (HTTP {response.status_code}: "
        f"{_snippet(response)}); check --api-key / CATM_JUDGE_API_KEY"
    )


class _Retryable(Exception):
    """An infrastructure failure worth another try."""


class _Permanent(Exception):
    """A failure another try will not fix (HTTP 400/401/404): report it at once."""


class OpenAIJudge:
    """A judge behind an OpenAI-compatible `/chat/completions` endpoint.

    `base_url` is the API root (`http://host:8000/v1`). Requests run concurrently up to
    `concurrency`; each is retried `max_retries` times with exponential backoff from
    `backoff_s`, and times out after `timeout_s`.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        cache: Path | None = None,
        template: str | None = None,
        concurrency: int = 16,
        max_retries: int = 4,
        timeout_s: float = 60.0,
        backoff_s: float = 1.0,
        max_tokens: int = 16,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise JudgeError(f"judge endpoint must be an http(s) URL, got {base_url!r}")
        if concurrency < 1 or max_retries < 0:
            raise JudgeError("concurrency must be >= 1 and max_retries >= 0")
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = api_key
        self._template = template if template is not None else default_template()
        try:
            self._template.format(path="", issue="", reasoning="")
        except (KeyError, IndexError, ValueError) as exc:
            raise JudgeError(f"judge template is not a valid format string: {exc}") from exc
        self._cache = JudgeCache(cache) if cache is not None else None
        self._concurrency = concurrency
        self._max_retries = max_retries
        self._timeout_s = timeout_s
        self._backoff_s = backoff_s
        self._max_tokens = max_tokens

    @property
    def name(self) -> str:
        return self._model

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        on_result: Callable[[JudgeResult], None] | None = None,
    ) -> list[JudgeResult]:
        return asyncio.run(self._judge_all(requests, on_result))

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()

    @property
    def endpoint(self) -> str:
        """The API root this judge asks (`.../v1`)."""
        return self._url.removesuffix("/chat/completions")

    def preflight(self, timeout_s: float = 10.0) -> str:
        """Check with one or two quick requests, before any work, that the endpoint answers,
        accepts the key and serves the model; raise `JudgeError` saying what is wrong.

        `GET /models` first: a busy server answers it at once, and it names the models served.
        Where it is not served (any answer but a model list), one chat completion of one token.
        Returns what was checked, for the log. No retries: this is the fast path to a clear error
        instead of every file ending JUDGE_FAILED after minutes of retries.
        """
        root = self.endpoint
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        with httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s)) as client:
            response = self._preflight_request(client, root, "GET", "/models", timeout_s)
            if response.status_code in (401, 403):
                raise JudgeError(_refused(root, response))
            served = _model_ids(response) if response.status_code == 200 else None
            if served is not None:
                if self._model in served:
                    return f"{root} serves {self._model}"
                shown = ", ".join(served[:8]) + (", ..." if len(served) > 8 else "")
                raise JudgeError(
                    f"judge endpoint {root} does not serve model {self._model!r} "
                    f"(GET /models lists: {shown or 'none'}); fix --judge"
                )
            body = {
                "model": self._model,
                "messages": [{"role": "user", "content": "Answer with one word: RELEVANT."}],
                "temperature": 0.0,
                "max_tokens": 1,
            }
            response = self._preflight_request(
                client, root, "POST", "/chat/completions", timeout_s, body
            )
        if response.status_code in (401, 403):
            raise JudgeError(_refused(root, response))
        if response.status_code >= 400:
            hint = (
                "; is --endpoint the API root (e.g. http://host:8000/v1) and --judge a model "
                "it serves?"
                if response.status_code in (404, 405)
                else ""
            )
            raise JudgeError(
                f"judge endpoint {root} answered a test request with HTTP "
                f"{response.status_code}: {_snippet(response)}{hint}"
            )
        try:
            _COMPLETION.decode(response.content)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise JudgeError(
                f"judge endpoint {root} answered a test request with something that is not a "
                f"chat completion: {_snippet(response)}"
            ) from exc
        return f"{root} answered a test request for {self._model}"

    @staticmethod
    def _preflight_request(
        client: httpx.Client,
        root: str,
        method: str,
        path: str,
        timeout_s: float,
        body: dict[str, object] | None = None,
    ) -> httpx.Response:
        what = f"{method} {path}"
        try:
            return client.request(method, root + path, json=body)
        except httpx.TimeoutException as exc:
            raise JudgeError(
                f"judge endpoint {root} did not answer within {timeout_s:g} s ({what}: "
                f"{type(exc).__name__}); start the server or fix --endpoint"
            ) from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise JudgeError(
                f"judge endpoint {root} is not reachable ({what}: {type(exc).__name__}: {exc}); "
                "start the server or fix --endpoint"
            ) from exc

    async def _judge_all(
        self,
        requests: Sequence[JudgeRequest],
        on_result: Callable[[JudgeResult], None] | None,
    ) -> list[JudgeResult]:
        results: list[JudgeResult | None] = [None] * len(requests)
        semaphore = asyncio.Semaphore(self._concurrency)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        limits = httpx.Limits(max_connections=self._concurrency)
        async with httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(self._timeout_s), limits=limits
        ) as client:

            async def one(index: int, request: JudgeRequest) -> None:
                prompt = render_prompt(self._template, request)
                key = JudgeCache.key(self._model, prompt)
                result = self._cache.get(key) if self._cache is not None else None
                if result is None:
                    async with semaphore:
                        result = await self._ask(client, prompt)
                    if self._cache is not None and result.verdict is not Verdict.JUDGE_FAILED:
                        self._cache.put(key, self._model, result)
                results[index] = result
                if on_result is not None:
                    on_result(result)

            await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
        return [r if r is not None else JudgeResult(Verdict.JUDGE_FAILED, "lost") for r in results]

    async def _ask(self, client: httpx.AsyncClient, prompt: str) -> JudgeResult:
        body = {
            "model": self._model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0.0,
            "max_tokens": self._max_tokens,
        }
        failure = ""
        for attempt in range(self._max_retries + 1):
            try:
                answer = await self._post(client, body)
            except _Permanent as exc:
                return JudgeResult(Verdict.JUDGE_FAILED, str(exc)[:200])
            except _Retryable as exc:
                failure = str(exc)
            else:
                verdict, _ = parse_verdict(answer)
                line = answer.strip().splitlines()[0][:200] if answer.strip() else ""
                return JudgeResult(verdict, line)
            if attempt < self._max_retries:
                # Jitter keeps many concurrent retries from hitting a recovering server at once.
                delay = self._backoff_s * (2**attempt)
                await asyncio.sleep(delay * (0.5 + random.random() / 2))
        return JudgeResult(Verdict.JUDGE_FAILED, failure[:200])

    async def _post(self, client: httpx.AsyncClient, body: dict[str, object]) -> str:
        try:
            response = await client.post(self._url, json=body)
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timeout: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            raise _Retryable(f"transport: {type(exc).__name__}: {exc}") from exc
        if response.status_code in _RETRY_STATUS or response.status_code >= 500:
            raise _Retryable(f"HTTP {response.status_code}")
        if response.status_code >= 400:
            # 400/401/404 will not fix themselves, but one bad item must not stop the batch.
            raise _Permanent(f"HTTP {response.status_code}: {response.text[:120]}")
        try:
            completion = _COMPLETION.decode(response.content)
        except msgspec.DecodeError as exc:
            raise _Retryable(f"not a chat completion: {exc}") from exc
        except RecursionError as exc:
            raise _Retryable("not a chat completion: nested too deeply") from exc
        if not completion.choices:
            raise _Retryable("chat completion without choices")
        # `reasoning_content` (vLLM's reasoning parser) is the model's deliberation, like a
        # <think> block: a verdict word in it is not an answer. No content = no verdict = RELEVANT.
        return completion.choices[0].message.content or ""

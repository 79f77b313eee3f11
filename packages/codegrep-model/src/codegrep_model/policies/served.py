"""`OpenAIPolicy`: any OpenAI-compatible chat-completions endpoint as a policy.

Works with vLLM (`vllm serve MODEL --enable-auto-tool-choice --tool-call-parser hermes`), with
hosted APIs, and with servers that return hermes `<tool_call>` blocks as plain text. Transient
failures (connection errors, HTTP 429/5xx) are retried with backoff; a request that outlives
`timeout_s` raises `EndpointTimeoutError`, which the engine records as an infrastructure error.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from codegrep_model._hermes import split_hermes
from codegrep_model.errors import EndpointError, EndpointTimeoutError
from codegrep_model.policies.protocol import PolicyReply, PolicyRequest
from codegrep_model.records import ToolCall, Usage
from codegrep_model.tools import openai_tools

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIPolicy"]

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIPolicy:
    """A served model behind `/v1/chat/completions`.

    ``tools_on_answer_turn`` (default True): the answer turn, which offers no tool, still sends
    the tool schemas, with ``tool_choice: "none"``, so that the chat template writes the system
    prompt of that turn as on the others, as a trainer's rollout has it on every turn (ms-swift
    writes a row's `tools` into every encoding). False: that turn sends no tools.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        extra_body: dict[str, Any] | None = None,
        client: httpx.AsyncClient | None = None,
        tools_on_answer_turn: bool = True,
    ) -> None:
        import httpx  # deferred: `codegrep localize` with the lexical default never needs it

        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.extra_body = dict(extra_body or {})
        self.tools_on_answer_turn = tools_on_answer_turn
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout_s)
        )
        self._owns_client = client is None
        self._calls = 0

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> OpenAIPolicy:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _payload(self, request: PolicyRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_openai() for m in request.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if request.tools:
            body["tools"] = list(request.tools)
            body["tool_choice"] = "auto"
            body["parallel_tool_calls"] = True
        elif self.tools_on_answer_turn:
            # A trainer's rollout carries the tools on every turn, so the chat template writes
            # the schemas into the system prompt of the answer turn too: the same prompt here,
            # with no call to be made (tool_choice none; the episode drops calls on that turn)
            body["tools"] = openai_tools()
            body["tool_choice"] = "none"
        body.update(self.extra_body)
        return body

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                resp = await self._client.post(url, json=body, timeout=self.timeout_s)
            except httpx.TimeoutException as exc:
                # A slow model is not a transient fault: retrying would double the wait.
                raise EndpointTimeoutError(
                    f"{url}: no reply within {self.timeout_s} s ({type(exc).__name__})"
                ) from exc
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if resp.status_code in _RETRY_STATUS:
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                continue
            if resp.status_code >= 400:
                raise EndpointError(f"{url}: HTTP {resp.status_code}: {resp.text[:500]}")
            try:
                data = resp.json()
            except ValueError as exc:
                raise EndpointError(f"{url}: reply is not JSON: {resp.text[:200]!r}") from exc
            if not isinstance(data, dict):
                raise EndpointError(f"{url}: reply is not a JSON object")
            return data
        raise EndpointError(f"{url}: failed after {self.max_retries + 1} attempts ({last})")

    async def reply(self, request: PolicyRequest) -> PolicyReply:
        data = await self._post(self._payload(request))
        try:
            return self._parse(data)
        except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
            # a reply of the wrong shape is the endpoint's failure, not the model's: the engine
            # records it as an infrastructure error instead of crashing the caller
            raise EndpointError(
                f"reply is not a chat completion ({type(exc).__name__}: {exc}): {str(data)[:200]}"
            ) from exc

    def _parse(self, data: dict[str, Any]) -> PolicyReply:
        message = data["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError("choices[0].message is not an object")
        self._calls += 1
        content = message.get("content")
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if content is not None and not isinstance(content, str):
            raise TypeError(f"content is a {type(content).__name__}")
        calls: list[ToolCall] = []
        for i, tc in enumerate(message.get("tool_calls") or []):
            fn = tc.get("function") or {}
            args = fn.get("arguments", "{}")
            calls.append(
                ToolCall(
                    id=str(tc.get("id") or f"call_{self._calls}_{i}"),
                    name=str(fn.get("name", "")),
                    arguments=args if isinstance(args, str) else json.dumps(args),
                )
            )
        if not calls and isinstance(content, str) and "<tool_call>" in content:
            content, parsed = split_hermes(content, id_prefix=f"call_{self._calls}")
            calls.extend(parsed)
        raw_usage = data.get("usage") or {}
        usage = Usage(
            prompt_tokens=int(raw_usage.get("prompt_tokens") or 0),
            completion_tokens=int(raw_usage.get("completion_tokens") or 0),
        )
        return PolicyReply(content=content, tool_calls=tuple(calls), usage=usage)

"""The HTTP layer shared by every remote provider (embeddings and LLMs).

- **Transport** (:class:`HTTPTransport`): ``httpx`` clients (one pooled sync client per
  provider instance; one ``AsyncClient`` per async call, since an async client belongs to
  one event loop) and ``tenacity`` retries.  Retried: HTTP 408/409/429/5xx, timeouts,
  connection errors and resets, and *bad responses* — malformed JSON, or a reply the
  provider's parser rejects (:class:`BadResponse`) — so a faulty reply never yields a
  wrong result.  Waits are exponential with full jitter (``retry_backoff_base * 2**n``
  capped at ``retry_backoff_max``), except that a ``Retry-After`` (seconds or HTTP-date)
  or ``retry-after-ms`` header is honoured, capped at ``max_retry_after``.  Other 4xx are
  not retried.  After ``max_retries + 1`` attempts a :class:`ProviderError` (or the
  subclass given as ``error_cls``) names the provider, model, URL, HTTP status or cause,
  and the number of attempts.  An optional ``requests_per_minute`` spaces requests
  (every attempt counts) with a small GCRA token bucket shared by threads and coroutines.
- **Streams** (:meth:`HTTPTransport.stream` / :meth:`HTTPTransport.astream`): Server-Sent
  Events (``data: {...}`` events, ending at ``data: [DONE]``; the OpenAI streaming format)
  or newline-delimited JSON (Ollama).  Opening the stream is retried like any request;
  once it is open nothing is retried (that could repeat output), so a broken connection or
  a malformed event raises the error at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import logging
import math
import threading
import time
from datetime import datetime, timezone
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Optional, Type

from ragloom._optional import importing

# importing this module without the extra raises MissingDependencyError (an ImportError)
with importing("remote", "ragloom.transport (remote embeddings and LLMs)"):
    import httpx
    from tenacity import (
        AsyncRetrying,
        RetryCallState,
        Retrying,
        retry_if_exception,
        stop_after_attempt,
        wait_random_exponential,
    )

from ragloom.errors import RagloomError

logger = logging.getLogger(__name__)

__all__ = [
    "ProviderError",
    "BadResponse",
    "HTTPTransport",
    "RateLimiter",
    "parse_retry_after",
    "RETRYABLE_STATUS",
]

#: 4xx statuses that are retried (besides every 5xx).
RETRYABLE_STATUS = frozenset({408, 409, 429})
_HINTS = {
    401: "check the API key",
    403: "check the API key and its permissions",
    404: "check the model name and the base URL",
}


class ProviderError(RagloomError):
    """A request to a remote provider failed for good.

    Attributes: ``provider``, ``model``, ``status`` (HTTP status or ``None``), ``reason``
    (short cause), ``attempts`` (requests made), ``url``.
    """

    #: words naming the request in the message ("embedding request", "LLM request")
    request_kind = "request"

    def __init__(
        self,
        provider: str,
        model: str,
        reason: str,
        status: Optional[int] = None,
        attempts: int = 1,
        url: Optional[str] = None,
    ) -> None:
        where = f" at {url}" if url else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(
            f"{provider} {self.request_kind} for model {model!r}{where} failed after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}: {code}{reason}"
        )
        self.provider = provider
        self.model = model
        self.reason = reason
        self.status = status
        self.attempts = attempts
        self.url = url


class BadResponse(Exception):
    """Raised by a provider's response parser: the reply is unusable (retried as a fault)."""


class _Fault(Exception):
    """One failed attempt (internal)."""

    def __init__(self, reason: str, retryable: bool, status: Optional[int] = None, retry_after: Optional[float] = None):
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


def parse_retry_after(headers: Any, now: Optional[float] = None) -> Optional[float]:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP-date); ``None`` if absent/invalid."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            value = float(ms) / 1000.0
            if math.isfinite(value):
                return max(0.0, value)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
        return max(0.0, value) if math.isfinite(value) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    current = datetime.now(timezone.utc).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


class RateLimiter:
    """At most ``requests_per_minute`` requests, bursts of ``burst`` (GCRA token bucket).

    :meth:`reserve` books the next slot and returns how long the caller must wait for it;
    thread-safe, and usable from coroutines (the caller sleeps with ``asyncio.sleep``).
    """

    def __init__(self, requests_per_minute: float, burst: int = 1) -> None:
        if not requests_per_minute or requests_per_minute <= 0:
            raise ValueError(f"requests_per_minute must be > 0, got {requests_per_minute!r}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst!r}")
        self.interval = 60.0 / float(requests_per_minute)
        self.tolerance = (burst - 1) * self.interval
        self._tat = 0.0
        self._lock = threading.Lock()

    def reserve(self) -> float:
        with self._lock:
            now = time.monotonic()
            tat = max(self._tat, now)
            wait = max(0.0, tat - self.tolerance - now)
            self._tat = tat + self.interval
            return wait

    def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            time.sleep(wait)

    async def aacquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            await asyncio.sleep(wait)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _error_detail(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except Exception:
        try:
            return _short(resp.text or resp.reason_phrase or "")
        except Exception:  # a streamed body that could not be read
            return resp.reason_phrase or ""
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("error") or err
            return _short(str(msg))
        return _short(str(err))
    return _short(str(data))


class _Wait:
    """Retry-After when the server gave one (capped), else exponential backoff with full jitter."""

    def __init__(self, base: float, maximum: float, retry_after_cap: float) -> None:
        self._exp = wait_random_exponential(multiplier=base, max=maximum)
        self._cap = retry_after_cap

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        ra = getattr(exc, "retry_after", None)
        if ra is not None:
            return min(float(ra), self._cap)
        return float(self._exp(state))


class _Events:
    """Splits a stream's lines into event payloads: SSE ``data`` (multi-line data joined with
    ``\\n``, comments and other fields skipped) or NDJSON (one payload per non-empty line)."""

    def __init__(self, framing: str) -> None:
        if framing not in ("sse", "ndjson"):
            raise ValueError(f"framing must be 'sse' or 'ndjson', got {framing!r}")
        self.sse = framing == "sse"
        self._data: List[str] = []

    def feed(self, line: str) -> Optional[str]:
        """The payload completed by ``line``, if any."""
        if not self.sse:
            return line if line.strip() else None
        if not line:
            return self.flush()
        if not line.startswith(":"):
            field, _, value = line.partition(":")
            if field == "data":
                self._data.append(value[1:] if value.startswith(" ") else value)
        return None

    def flush(self) -> Optional[str]:
        """The pending payload at the end of the stream, if any."""
        out = "\n".join(self._data) if self._data else None
        self._data = []
        return out

    def is_done(self, payload: str) -> bool:
        return self.sse and payload.strip() == "[DONE]"


#: what :meth:`HTTPTransport._stream_item` returns at ``data: [DONE]``
_END = object()


async def _then_blank(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    async for line in lines:
        yield line
    yield ""  # ends a last unterminated event


def _decode_event(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _Fault(f"malformed JSON in stream ({_short(str(exc), 120)}): {_short(text, 80)!r}", False) from exc


class HTTPTransport:
    """POST JSON with retries, rate limit and clear errors (see the module docstring).

    Args:
        provider / model: named in errors and logs.
        headers: sent with every request (auth lives here; never logged).
        timeout: seconds for connect/read/write/pool (for a stream: between two chunks).
        max_retries: retries after the first attempt (``0`` = one attempt).
        retry_backoff_base / retry_backoff_max: exponential backoff (seconds).
        max_retry_after: cap on a server's ``Retry-After`` (seconds).
        requests_per_minute: optional rate limit.
        error_cls: the :class:`ProviderError` subclass raised.

    Raises:
        ValueError: ``max_retries`` < 0, ``timeout`` <= 0 or a negative backoff.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        headers: Optional[Dict[str, str]] = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        retry_backoff_base: float = 0.5,
        retry_backoff_max: float = 30.0,
        max_retry_after: float = 60.0,
        requests_per_minute: Optional[float] = None,
        error_cls: Type[ProviderError] = ProviderError,
    ) -> None:
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        if not timeout or timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        if retry_backoff_base < 0 or retry_backoff_max < 0 or max_retry_after < 0:
            raise ValueError("retry_backoff_base, retry_backoff_max and max_retry_after must be >= 0")
        self.provider = provider
        self.model = model
        self.headers = dict(headers or {})
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.retry_backoff_base = float(retry_backoff_base)
        self.retry_backoff_max = float(retry_backoff_max)
        self.max_retry_after = float(max_retry_after)
        self.limiter = RateLimiter(requests_per_minute) if requests_per_minute else None
        self.error_cls = error_cls
        self._client: Optional[httpx.Client] = None
        self._client_lock = threading.Lock()
        self.request_count = 0  # attempts made, for diagnostics

    # -- clients -----------------------------------------------------------------------
    def _httpx_timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.timeout)

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = httpx.Client(timeout=self._httpx_timeout(), headers=self.headers)
        return self._client

    def new_async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=self._httpx_timeout(), headers=self.headers)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- one attempt -----------------------------------------------------------------
    @staticmethod
    def _status_fault(resp: httpx.Response) -> _Fault:
        status = resp.status_code
        detail = _error_detail(resp) or resp.reason_phrase
        hint = _HINTS.get(status)
        if hint:
            detail = f"{detail} ({hint})"
        retryable = status in RETRYABLE_STATUS or status >= 500
        retry_after = parse_retry_after(resp.headers) if retryable else None
        return _Fault(detail, retryable, status, retry_after)

    def _classify(self, resp: httpx.Response, parse: Callable[[Any], Any]) -> Any:
        status = resp.status_code
        if status >= 400:
            raise self._status_fault(resp)
        try:
            data = resp.json()
        except ValueError as exc:
            raise _Fault(f"malformed JSON in response ({_short(str(exc), 120)})", True, status) from exc
        return self._parse(parse, data, status, retryable=True)

    @staticmethod
    def _parse(parse: Callable[[Any], Any], data: Any, status: Optional[int], retryable: bool) -> Any:
        try:
            return parse(data)
        except BadResponse as exc:
            raise _Fault(f"bad response: {exc}", retryable, status) from exc
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise _Fault(
                f"unexpected response shape ({type(exc).__name__}: {_short(str(exc), 120)})", retryable, status
            ) from exc

    def _transport_fault(self, exc: Exception, url: str = "") -> _Fault:
        if isinstance(exc, httpx.TimeoutException):
            return _Fault(f"timed out after {self.timeout:g}s ({type(exc).__name__})", True)
        if isinstance(exc, httpx.ConnectError):
            where = httpx.URL(url).netloc.decode() if url else "the server"
            return _Fault(f"connection error ({type(exc).__name__}: {_short(str(exc), 160)}; "
                          f"is the server running at {where}?)", True)
        if isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError)):
            return _Fault(f"connection error ({type(exc).__name__}: {_short(str(exc), 160)})", True)
        return _Fault(f"{type(exc).__name__}: {_short(str(exc), 160)}", False)

    def _retrying_kwargs(self, attempts: Optional[int]) -> Dict[str, Any]:
        return dict(
            stop=stop_after_attempt((self.max_retries + 1) if attempts is None else attempts),
            wait=_Wait(self.retry_backoff_base, self.retry_backoff_max, self.max_retry_after),
            retry=retry_if_exception(lambda e: isinstance(e, _Fault) and e.retryable),
            before_sleep=self._log_retry,
            reraise=True,
        )

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        status = f"HTTP {exc.status} " if isinstance(exc, _Fault) and exc.status else ""
        logger.warning(
            "%s %s (model %r) attempt %d failed: %s%s; retrying in %.2fs",
            self.provider,
            self.error_cls.request_kind,
            self.model,
            state.attempt_number,
            status,
            getattr(exc, "reason", exc),
            getattr(state, "upcoming_sleep", 0.0),
        )

    def _error(self, fault: _Fault, attempts: int, url: str) -> ProviderError:
        return self.error_cls(self.provider, self.model, fault.reason, fault.status, attempts, url)

    def _stream_item(self, events: _Events, line: str, parse_event: Callable[[Any], Any], status: int) -> Any:
        """What one line of an open stream yields: ``None`` (nothing yet, or an event
        ``parse_event`` skips), :data:`_END` (``[DONE]``), or the parsed event.  Raises
        :class:`_Fault` for a malformed or rejected event (not retried)."""
        text = events.feed(line)
        if text is None:
            return None
        if events.is_done(text):
            return _END
        return self._parse(parse_event, _decode_event(text), status, retryable=False)

    def _stream_broke(self, exc: httpx.HTTPError, attempts: int, url: str) -> ProviderError:
        fault = self._transport_fault(exc, url)
        return self._error(_Fault(f"stream broke: {fault.reason}", False), attempts, url)

    # -- public ----------------------------------------------------------------------
    def post(
        self,
        url: str,
        payload: Any,
        parse: Callable[[Any], Any],
        params: Optional[Dict[str, str]] = None,
        attempts: Optional[int] = None,
        method: str = "POST",
    ) -> Any:
        """POST ``payload`` as JSON to ``url`` (``method="GET"``: no body); returns ``parse(response_json)``.

        ``attempts`` overrides ``max_retries + 1`` for this call.

        Raises:
            ProviderError (``error_cls``): a permanent fault, or retries exhausted.
        """
        count = 0

        def attempt() -> Any:
            nonlocal count
            count += 1
            self.request_count += 1
            if self.limiter is not None:
                self.limiter.acquire()
            try:
                if method == "GET":
                    resp = self.client.get(url, params=params)
                else:
                    resp = self.client.post(url, json=payload, params=params)
            except httpx.HTTPError as exc:
                raise self._transport_fault(exc, url) from exc
            return self._classify(resp, parse)

        try:
            return Retrying(**self._retrying_kwargs(attempts))(attempt)
        except _Fault as fault:
            raise self._error(fault, count, url) from fault.__cause__

    async def apost(
        self,
        client: httpx.AsyncClient,
        url: str,
        payload: Any,
        parse: Callable[[Any], Any],
        params: Optional[Dict[str, str]] = None,
        attempts: Optional[int] = None,
    ) -> Any:
        """Async :meth:`post` on ``client`` (from :meth:`new_async_client`)."""
        count = 0

        async def attempt() -> Any:
            nonlocal count
            count += 1
            self.request_count += 1
            if self.limiter is not None:
                await self.limiter.aacquire()
            try:
                resp = await client.post(url, json=payload, params=params)
            except httpx.HTTPError as exc:
                raise self._transport_fault(exc, url) from exc
            return self._classify(resp, parse)

        try:
            return await AsyncRetrying(**self._retrying_kwargs(attempts))(attempt)
        except _Fault as fault:
            raise self._error(fault, count, url) from fault.__cause__

    # -- streams ---------------------------------------------------------------------
    def stream(self, url: str, payload: Any, parse_event: Callable[[Any], Any], framing: str = "sse") -> Iterator[Any]:
        """POST ``payload`` and yield ``parse_event(event_json)`` for every streamed event.

        ``framing``: ``"sse"`` (Server-Sent Events; ``data: [DONE]`` ends the stream) or
        ``"ndjson"`` (one JSON object per line).  Events for which ``parse_event`` returns
        ``None`` are skipped.  Opening the stream (connection and HTTP status) is retried;
        faults after that are not.

        Raises:
            ProviderError (``error_cls``): the stream could not be opened, or broke, or an
                event was malformed or rejected by ``parse_event``.
        """
        events = _Events(framing)
        count = 0

        def open_stream() -> httpx.Response:
            nonlocal count
            count += 1
            self.request_count += 1
            if self.limiter is not None:
                self.limiter.acquire()
            try:
                resp = self.client.send(self.client.build_request("POST", url, json=payload), stream=True)
            except httpx.HTTPError as exc:
                raise self._transport_fault(exc, url) from exc
            if resp.status_code >= 400:
                try:
                    resp.read()
                except httpx.HTTPError:
                    pass
                finally:
                    resp.close()
                raise self._status_fault(resp)
            return resp

        try:
            resp = Retrying(**self._retrying_kwargs(None))(open_stream)
        except _Fault as fault:
            raise self._error(fault, count, url) from fault.__cause__
        try:
            for line in itertools.chain(resp.iter_lines(), [""]):  # "" ends a last unterminated event
                item = self._stream_item(events, line, parse_event, resp.status_code)
                if item is _END:
                    return
                if item is not None:
                    yield item
        except _Fault as fault:
            raise self._error(fault, count, url) from fault.__cause__
        except httpx.HTTPError as exc:
            raise self._stream_broke(exc, count, url) from exc
        finally:
            resp.close()

    async def astream(
        self, url: str, payload: Any, parse_event: Callable[[Any], Any], framing: str = "sse"
    ) -> AsyncIterator[Any]:
        """Async :meth:`stream` (its own ``AsyncClient``, closed when the stream ends)."""
        events = _Events(framing)
        count = 0
        client = self.new_async_client()

        async def open_stream() -> httpx.Response:
            nonlocal count
            count += 1
            self.request_count += 1
            if self.limiter is not None:
                await self.limiter.aacquire()
            try:
                resp = await client.send(client.build_request("POST", url, json=payload), stream=True)
            except httpx.HTTPError as exc:
                raise self._transport_fault(exc, url) from exc
            if resp.status_code >= 400:
                try:
                    await resp.aread()
                except httpx.HTTPError:
                    pass
                finally:
                    await resp.aclose()
                raise self._status_fault(resp)
            return resp

        try:
            try:
                resp = await AsyncRetrying(**self._retrying_kwargs(None))(open_stream)
            except _Fault as fault:
                raise self._error(fault, count, url) from fault.__cause__
            try:
                async for line in _then_blank(resp.aiter_lines()):
                    item = self._stream_item(events, line, parse_event, resp.status_code)
                    if item is _END:
                        return
                    if item is not None:
                        yield item
            except _Fault as fault:
                raise self._error(fault, count, url) from fault.__cause__
            except httpx.HTTPError as exc:
                raise self._stream_broke(exc, count, url) from exc
            finally:
                await resp.aclose()
        finally:
            await client.aclose()

"""The Quotegate client: every REST operation typed from /openapi.json, GraphQL, rate limits, the export, follow().

Amounts stay decimal strings exactly as served (``"101.5"``): convert them with ``decimal.Decimal``, never float.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Self
from urllib.parse import quote

import httpx
from httpx_sse import EventSource

from .rate_limit import RateLimit, read_rate_limits
from .schema import ChangeOut, ExportOut, ExportQuoteLine, MarketQuoteOut, Meta, Operations

__all__ = ["ExportLines", "FollowStep", "LocalCopy", "QuoteKey", "QuotegateClient", "QuotegateError", "quote_key"]


class QuotegateError(Exception):
    """An answer that was not a success, from the service's error envelope (``{"error": {code, message, details}}``).

    `status` is the HTTP status (0 when no answer came, e.g. ``network_error``, or for a stream's terminal event).
    """

    def __init__(self, status: int, code: str, message: str, details: Any = None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details


#: The key of a quote in a LocalCopy: (market_hash_name, market_code, side).
QuoteKey = tuple[str, str, str]


def quote_key(name: str, market: str, side: str) -> QuoteKey:
    """The LocalCopy key of the quote of `name` on `market` for `side`."""
    return (name, market, side)


@dataclass
class LocalCopy:
    """The copy follow() keeps: every quote by (market_hash_name, market_code, side), current to `cursor`."""

    quotes: dict[QuoteKey, MarketQuoteOut] = field(default_factory=dict)
    #: The change sequence the copy is current to (a decimal string, the feed's cursor).
    cursor: str = "0"


@dataclass
class FollowStep:
    """What follow() yields: the copy (the same object every step) and the changes just applied."""

    copy: LocalCopy
    changes: list[ChangeOut]
    #: True when the step downloaded the export (the first step, or after the cursor expired).
    downloaded: bool
    #: How the changes came: the export download, the live stream, or the polled feed.
    via: Literal["export", "stream", "poll"]


@dataclass
class _StreamEnd:
    """How one connection to the live stream ended (see QuotegateClient._stream_once)."""

    kind: Literal["stopped", "expired", "unavailable", "ended"]
    wait: float = 0.0
    error: QuotegateError | None = None
    delivered: int = 0


@dataclass
class ExportLines:
    """The NDJSON export as export_lines() opens it: its ETag, whether it was unchanged (a free 304, no lines), and
    its quotes one line at a time (iterate it; each is read from the network when asked for)."""

    etag: str
    not_modified: bool
    _response: httpx.Response | None = None

    def __iter__(self) -> Iterator[ExportQuoteLine]:
        if self._response is None:
            return
        for line in self._response.iter_lines():  # httpx undoes the gzip Content-Encoding
            if line.strip():
                yield json.loads(line)


def _error_of(response: httpx.Response) -> QuotegateError:
    """The error envelope of a failed answer as a QuotegateError (the answer's body must have been read)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return QuotegateError(response.status_code, "unknown", response.reason_phrase or "error", None)
    return QuotegateError(response.status_code, str(err.get("code", "unknown")), str(err.get("message", "")), err.get("details"))


def _retry_after(response: httpx.Response, default: float) -> float:
    """An answer's Retry-After in seconds (whole seconds), or `default` when absent or unreadable."""
    try:
        return max(0.0, float(response.headers["retry-after"]))
    except (KeyError, ValueError):
        return default


class QuotegateClient(Operations):
    """A client of one Quotegate service with one API key (thread-safe as httpx.Client is; follow() is not shared).

    Every REST operation with a JSON answer is a method (generated into ``schema.Operations`` from /openapi.json:
    ``client.get_prices(market_hash_name=...)`` returns the ``ItemPricesOut`` of the answer's ``data``; its ``meta``
    is in ``client.meta``). A refusal raises QuotegateError; a 429 is sent again after its Retry-After, at most
    `max_retries` times. Use it as a context manager, or call close().
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        max_retries: int = 3,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        """`base_url`: the service, e.g. ``http://localhost:4000`` (its default port). `api_key`: ``qg_...``.
        `timeout`: seconds for connecting and for each read of an ordinary answer. `http`: an httpx.Client to use
        (its base_url is ignored). `sleep`: how to wait before a retry (tests)."""
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.max_retries = max_retries
        self._owns_http = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout)
        self._sleep = sleep
        #: Every rate-limit policy of the last answer that carried any (empty before any).
        self.rate_limits: list[RateLimit] = []
        #: The ``meta`` of the last answer in the envelope (request_id, billable, credit).
        self.meta: Meta | None = None
        self._exports: dict[str, tuple[str, ExportOut]] = {}

    def close(self) -> None:
        """Closes the connections (of an httpx.Client this client made)."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def rate_limit(self) -> RateLimit | None:
        """The policy of the last answer with the fewest requests left (the one that refuses first), or None."""
        return min(self.rate_limits, key=lambda p: p.remaining) if self.rate_limits else None

    # -- requests ----------------------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        route: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        retries: int | None = None,
    ) -> httpx.Response:
        """Sends one request with the API key (the answer read whole); keeps its rate limits; a 429 waits its
        Retry-After and is sent again, at most `retries` (default max_retries) times. Returns any status."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        all_headers = {"X-API-Key": self.api_key, **(headers or {})}
        limit = self.max_retries if retries is None else retries
        attempt = 0
        while True:
            response = self._http.request(method, self.base_url + route, params=query, json=json_body, headers=all_headers)
            self._keep_limits(response)
            if response.status_code != 429 or attempt >= limit:
                return response
            attempt += 1
            self._sleep(_retry_after(response, 1.0))

    def _keep_limits(self, response: httpx.Response) -> None:
        limits = read_rate_limits(response.headers)
        if limits:
            self.rate_limits = limits

    def _call(self, method: str, route: str, *, path_params: dict[str, Any], query: dict[str, Any], body: Any = None, envelope: bool) -> Any:
        """One generated operation: fills the path, sends, raises a refusal, returns ``data`` (envelope) or the body."""
        for name, value in path_params.items():
            route = route.replace("{" + name + "}", quote(str(value), safe=""))
        response = self.request(method, route, params=query, json_body=body)
        if not response.is_success:
            raise _error_of(response)
        parsed = response.json()
        if not envelope:
            return parsed
        self.meta = parsed.get("meta")
        return parsed["data"]

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Runs a GraphQL document; returns its ``data``; raises the first error as a QuotegateError (its
        ``extensions.code``, and ``extensions.http.status`` as the status)."""
        response = self.request(
            "POST",
            "/graphql",
            json_body={"query": query, "variables": dict(variables or {})},
            headers={"Accept": "application/graphql-response+json, application/json"},
        )
        body = response.json()
        errors = body.get("errors") or []
        if errors:
            ext = errors[0].get("extensions") or {}
            status = (ext.get("http") or {}).get("status") or response.status_code
            raise QuotegateError(int(status), str(ext.get("code", "unknown")), str(errors[0].get("message", "")), ext)
        return body.get("data") or {}

    def export_prices(self, side: Literal["ask", "bid", "mid", "all"] = "all") -> tuple[ExportOut, bool]:
        """The export of `side`: downloaded, or, while the copy held is still current, a 304 (free) and that copy.
        Returns (export, not_modified). Raises a QuotegateError for a refusal."""
        held = self._exports.get(side)
        response = self.request("GET", "/prices/export", params={"side": side}, headers={"If-None-Match": held[0]} if held else None)
        if response.status_code == 304 and held:
            return held[1], True
        if not response.is_success:
            raise _error_of(response)
        body: ExportOut = response.json()  # httpx undoes the gzip Content-Encoding
        self._exports[side] = (response.headers.get("etag", ""), body)
        return body, False

    @contextlib.contextmanager
    def export_lines(self, side: Literal["ask", "bid", "mid", "all"] = "all", *, if_none_match: str | None = None) -> Iterator[ExportLines]:
        """The export of `side` as NDJSON (``GET /prices/export?format=ndjson``), read a quote at a time without holding
        the file; a context manager (the connection is closed when the block ends)::

            with client.export_lines("all") as export:
                for line in export:   # ExportQuoteLine: a quote with its item's market_hash_name
                    ...
            etag = export.etag

        With `if_none_match` the ETag of the ndjson file already read, an unchanged export is a 304: ``not_modified``
        is True and there are no lines (free). A download costs 10 credits (refunded by the service when it does not
        arrive whole); a 304 counts towards the export's rate limit (2 a minute); a 429 is waited out like any request.
        Raises a QuotegateError for a refusal; iterating raises ``json.JSONDecodeError`` for a line that is not JSON and
        httpx's errors when the connection breaks."""
        headers = {"X-API-Key": self.api_key, **({"If-None-Match": if_none_match} if if_none_match else {})}
        attempt = 0
        while True:
            with self._http.stream("GET", self.base_url + "/prices/export", params={"side": side, "format": "ndjson"}, headers=headers) as response:
                self._keep_limits(response)
                if response.status_code == 429 and attempt < self.max_retries:
                    response.read()
                    attempt += 1
                    wait = _retry_after(response, 1.0)
                else:
                    if response.status_code == 304:
                        yield ExportLines(response.headers.get("etag", if_none_match or ""), True)
                        return
                    if not response.is_success:
                        response.read()
                        raise _error_of(response)
                    yield ExportLines(response.headers.get("etag", ""), False, response)
                    return
            self._sleep(wait)

    # -- follow --------------------------------------------------------------------------------------------------
    def follow(
        self,
        *,
        transport: Literal["auto", "stream", "poll"] = "auto",
        interval: float = 5.0,
        page_limit: int = 1000,
        stream_retry: float = 60.0,
        idle_timeout: float = 45.0,
        stop: threading.Event | None = None,
    ) -> Generator[FollowStep, None, None]:
        """Keeps a local copy of every price current; a generator of FollowStep.

        The export once (``via="export"``), then the changes after its ``change_seq``, none missed and none twice:

        - ``auto`` (default): the live stream (GET /prices/changes/stream, server-sent events; 1 credit per started
          minute), one step per change (``via="stream"``). While the stream cannot be opened (no answer, a 5xx, a
          429 ``rate_limited`` or ``too_many_subscriptions``, a server without it) the change feed (GET
          /prices/changes, 1 credit a page) is polled every `interval` seconds for `stream_retry` seconds (at least
          the 429's Retry-After), a step per round that changed something (``via="poll"``); then the stream is
          tried again. A stream that was open and ended (closed by the service, a terminal ``slow_consumer`` or
          ``dependency_unavailable`` event, a lost connection, `idle_timeout` seconds without a byte: the service
          pings every 15 s) is opened again from the cursor at once, or polled first when it delivered nothing.
        - ``stream``: the stream only (one that cannot be opened raises); ``poll``: the feed only.

        A cursor older than the service keeps (410 ``cursor_expired``) downloads the export again. 401, 403, 402
        (``credit_insufficient``, also when a stream ends with it) and 422 raise a QuotegateError. Ends when `stop`
        is set (checked between changes and while waiting to poll; a stream waiting for its next change notices
        within `idle_timeout`), or when the caller stops iterating (``break``; the open stream is closed).
        """
        copy = LocalCopy()

        def download() -> None:
            body, _ = self.export_prices("all")
            copy.quotes = {quote_key(item["market_hash_name"], q["market_code"], q["side"]): q for item in body["items"] for q in item["markets"]}
            copy.cursor = body["change_seq"]

        def apply(change: ChangeOut) -> None:
            key = quote_key(change["market_hash_name"], change["market_code"], change["side"])
            if change["quote"] is None:
                copy.quotes.pop(key, None)
            else:
                copy.quotes[key] = change["quote"]
            copy.cursor = change["seq"]

        def stopped() -> bool:
            return stop is not None and stop.is_set()

        download()
        yield FollowStep(copy, [], True, "export")
        poll_until = float("inf") if transport == "poll" else 0.0
        while not stopped():
            if time.monotonic() >= poll_until:
                stream = self._stream_once(copy.cursor, idle_timeout, stopped)
                try:
                    while True:
                        try:
                            change = next(stream)
                        except StopIteration as done:
                            end: _StreamEnd = done.value
                            break
                        apply(change)
                        yield FollowStep(copy, [change], False, "stream")
                finally:
                    stream.close()  # closes the connection when the caller left during a step
                if end.kind == "stopped":
                    return
                if end.kind == "expired":
                    download()  # the stream no longer reaches back to the copy: start again from a fresh export
                    yield FollowStep(copy, [], True, "export")
                    continue
                if end.kind == "unavailable":
                    if transport == "stream":
                        assert end.error is not None
                        raise end.error
                    poll_until = time.monotonic() + max(end.wait, stream_retry)
                elif end.delivered == 0:
                    if transport == "stream":
                        self._wait(interval, stop)
                    else:
                        poll_until = time.monotonic() + stream_retry
                if time.monotonic() >= poll_until:
                    continue  # open the stream again at once
            applied: list[ChangeOut] = []
            downloaded = False
            try:
                while True:
                    page = self.get_price_changes(since=copy.cursor, limit=str(page_limit))
                    for change in page["changes"]:
                        apply(change)
                        applied.append(change)
                    copy.cursor = page["next_cursor"]
                    if not page["has_more"]:
                        break
            except QuotegateError as e:
                if e.code != "cursor_expired":
                    raise
                download()  # the feed no longer reaches back to the copy: start again from a fresh export
                downloaded = True
            if downloaded:
                yield FollowStep(copy, [], True, "export")
            elif applied:
                yield FollowStep(copy, applied, False, "poll")
            self._wait(interval, stop)

    @staticmethod
    def _wait(seconds: float, stop: threading.Event | None) -> None:
        if stop is not None:
            stop.wait(seconds)
        else:
            time.sleep(seconds)

    def _stream_once(self, since: str, idle_timeout: float, stopped: Callable[[], bool]) -> Generator[ChangeOut, None, _StreamEnd]:
        """One connection to the live stream from `since`: yields its changes (the next is read when the caller asks
        for it) and returns a _StreamEnd. Refusals that following cannot get past raise a QuotegateError."""
        if stopped():
            return _StreamEnd("stopped")
        timeout = httpx.Timeout(connect=30.0, read=idle_timeout, write=30.0, pool=30.0)
        headers = {"X-API-Key": self.api_key, "Accept": "text/event-stream", "Cache-Control": "no-store"}
        try:
            with self._http.stream("GET", self.base_url + "/prices/changes/stream", params={"since": since}, headers=headers, timeout=timeout) as response:
                self._keep_limits(response)
                if not response.is_success:
                    response.read()
                    error = _error_of(response)
                    if error.code == "cursor_expired":
                        return _StreamEnd("expired")
                    if response.status_code in (404, 406, 429) or response.status_code >= 500:
                        return _StreamEnd("unavailable", wait=_retry_after(response, 0.0), error=error)
                    raise error  # 401, 403, 402, 422: polling would be refused the same way
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    message = f"the stream answered {response.headers.get('content-type')}"
                    return _StreamEnd("unavailable", error=QuotegateError(response.status_code, "not_an_event_stream", message))
                delivered = 0
                terminal: QuotegateError | None = None
                try:
                    for event in EventSource(response).iter_sse():
                        if event.event == "change":
                            delivered += 1
                            yield json.loads(event.data)
                        elif event.event == "error":
                            err = (json.loads(event.data) or {}).get("error") or {}
                            terminal = QuotegateError(0, str(err.get("code", "unknown")), str(err.get("message", "")), err.get("details"))
                            break
                        if stopped():
                            return _StreamEnd("stopped")
                except httpx.TransportError:
                    pass  # a lost connection or idle_timeout without a byte: open it again
                if stopped():
                    return _StreamEnd("stopped")
                if terminal is not None and terminal.code in ("credit_insufficient", "unauthorized", "forbidden"):
                    raise terminal
                return _StreamEnd("ended", delivered=delivered)
        except httpx.TransportError as e:
            return _StreamEnd("unavailable", error=QuotegateError(0, "network_error", str(e)))

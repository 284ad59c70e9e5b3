"""The Python client against a served instance (issue 44, point 6): REST operations typed from /openapi.json, the
error envelope, every RateLimit policy of an answer, 429 retries after Retry-After, the export kept by its ETag,
and follow() equal to the served state through ingestion on the live stream, on the polled feed, and falling back
from the one to the other while the stream is refused."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest

from quotegate_client import FollowStep, QuotegateClient, QuotegateError, quote_key

#: The conftest fixtures `ingest` and `names`.
Ingest = Callable[..., dict[str, Any]]
Names = Callable[[str], str]


def served(client: QuotegateClient, item_names: list[str]) -> dict[tuple[str, str, str], Any]:
    """The quotes GET /prices serves now for `item_names` (POST /prices/batch), keyed like a LocalCopy."""
    out = {}
    for item in client.batch_prices(body={"market_hash_names": item_names})["items"]:
        for q in item["markets"]:
            out[quote_key(item["market_hash_name"], q["market_code"], q["side"])] = q
    return out


def mine(step: FollowStep, item_names: list[str]) -> dict[tuple[str, str, str], Any]:
    """The copy's quotes of `item_names` (the instance holds other tests' items too)."""
    return {k: q for k, q in step.copy.quotes.items() if k[0] in item_names}


def current_seq(client: QuotegateClient) -> int:
    """The change sequence now: the feed's empty page without `since`."""
    return int(client.get_price_changes()["next_cursor"])


def until(steps: Iterator[FollowStep], target: int, last: FollowStep, each: Callable[[FollowStep], None] = lambda s: None) -> FollowStep:
    """Takes steps until the copy is current to `target`; returns the last."""
    step = last
    while int(step.copy.cursor) < target:
        step = next(steps)
        each(step)
    return step


def test_rest_operations_are_typed_methods_that_keep_meta_and_rate_limits(client: QuotegateClient, ingest: Ingest, names: Names) -> None:
    ak = names("AK-47")
    ingest((ak, "ask", "100"), (ak, "bid", "90.5"))
    prices = client.get_prices(market_hash_name=ak, markets="BUFF163")
    assert prices["market_hash_name"] == ak
    by_side = {q["side"]: q for q in prices["markets"]}
    assert by_side["ask"]["market_price_amount"] == "100"  # a decimal string, as served
    assert Decimal(by_side["bid"]["market_price_amount"] or "NaN") == Decimal("90.5")
    assert client.meta is not None and client.meta["billable"] is True
    credit = client.meta.get("credit")
    assert credit is not None and credit["cost"] == 1
    assert [(p.policy, p.limit, p.window_seconds, p.remaining) for p in client.rate_limits] == [("getPrices", 120, 60, 119)]
    assert client.rate_limit == client.rate_limits[0]
    websites = client.list_websites()
    assert any(w["code"] == "BUFF163" for w in websites)
    assert client.get_website("BUFF163")["code"] == "BUFF163"
    assert client.get_health() == {"status": "ok"}


def test_refusals_raise_the_error_envelope(client: QuotegateClient, base_url: str) -> None:
    with pytest.raises(QuotegateError) as bad:
        client.get_prices(market_hash_name="")
    assert bad.value.status == 422 and bad.value.code == "validation_failed"
    assert any(d["field"] == "market_hash_name" and d["location"] == "query" for d in bad.value.details["errors"])
    with QuotegateClient(base_url, "qg_" + "A" * 32) as stranger, pytest.raises(QuotegateError) as unauthorized:
        stranger.get_prices(market_hash_name="AK-47 | Redline (Field-Tested)")
    assert unauthorized.value.status == 401 and unauthorized.value.code == "unauthorized"
    with pytest.raises(QuotegateError) as missing:
        client.get_website("NO_SUCH_MARKET")
    assert missing.value.status == 404


def test_export_is_kept_by_its_etag_and_a_429_is_retried_after_retry_after(base_url: str, api_key: str) -> None:
    waits: list[float] = []
    with QuotegateClient(base_url, api_key, max_retries=2, sleep=waits.append) as client:
        first, not_modified = client.export_prices("all")
        assert not_modified is False and "change_seq" in first and isinstance(first["items"], list)
        second, not_modified = client.export_prices("all")
        assert not_modified is True and second is first  # a free 304: the copy held
        # The export allows 2 a minute (a 304 counts): the third is refused, waited out twice (the sleep records
        # instead of waiting), then raised.
        with pytest.raises(QuotegateError) as limited:
            client.export_prices("all")
        assert limited.value.status == 429 and limited.value.code == "rate_limited"
        assert len(waits) == 2 and all(1 <= w <= 60 for w in waits)
        assert client.rate_limit is not None and client.rate_limit.policy == "exportPrices" and client.rate_limit.remaining == 0


def test_every_rate_limit_policy_of_a_graphql_answer_is_kept(client: QuotegateClient, ingest: Ingest, names: Names) -> None:
    ak = names("AK-47")
    ingest((ak, "ask", "12"))
    both = "query Two($n: String!) { item(marketHashName: $n) { marketHashName } priceChanges(limit: 1) { nextCursor } }"
    assert client.graphql(both, {"n": ak})["item"] == {"marketHashName": ak}
    assert sorted((p.policy, p.limit, p.window_seconds, p.remaining) for p in client.rate_limits) == [
        ("getPriceChanges", 120, 60, 119),
        ("getPrices", 120, 60, 119),
    ]
    # Two getPrices fields (aliased) and one getPriceChanges: getPrices has fewer left, so rate_limit names it.
    client.graphql("query Again($n: String!) { item(marketHashName: $n) { marketHashName } a: item(marketHashName: $n) { marketHashName } priceChanges(limit: 1) { nextCursor } }", {"n": ak})
    assert sorted((p.policy, p.remaining) for p in client.rate_limits) == [("getPriceChanges", 118), ("getPrices", 117)]
    assert client.rate_limit is not None and client.rate_limit.policy == "getPrices"
    with pytest.raises(QuotegateError) as bad:
        client.graphql("query { priceChanges(since: \"999999999999\") { nextCursor } }")
    assert bad.value.code == "validation_failed"


@pytest.mark.parametrize("transport", ["stream", "poll"])
def test_follow_keeps_the_copy_equal_to_the_served_state(client: QuotegateClient, ingest: Ingest, names: Names, transport: str) -> None:
    ak, awp = names("AK-47"), names("AWP")
    mine_names = [ak, awp]
    ingest((ak, "ask", "100"), (ak, "bid", "90"), (awp, "ask", "7.25"))
    seen: set[str] = set()

    def check(step: FollowStep) -> None:
        assert step.via == transport and step.changes
        for change in step.changes:
            assert change["seq"] not in seen  # never twice
            seen.add(change["seq"])

    steps = client.follow(transport=transport, interval=0.05, page_limit=2)  # type: ignore[arg-type]
    try:
        first = next(steps)
        assert first.via == "export" and first.downloaded
        step = until(steps, current_seq(client), first, check)  # the export was built before: the changes since it
        assert mine(step, mine_names) == served(client, mine_names)
        for i in range(3):
            # A new price, a new item, and the bid delisted or listed again: each row changes the served state.
            ingest((ak, "ask", f"{200 + i}.5"), (names(f"M4A4 {i}"), "ask", f"{5 + i}"), (ak, "bid", None if i % 2 == 0 else f"{80 + i}"))
            mine_names.append(names(f"M4A4 {i}"))
            step = until(steps, current_seq(client), step, check)
            assert mine(step, mine_names) == served(client, mine_names)
        assert step.copy.quotes[quote_key(ak, "BUFF163", "ask")]["market_price_amount"] == "202.5"
        assert step.copy.quotes[quote_key(ak, "BUFF163", "bid")]["market_price_amount"] is None  # delisted
    finally:
        steps.close()  # closes an open stream


def test_follow_falls_back_to_the_feed_while_the_stream_is_refused_then_returns_to_it(client: QuotegateClient, base_url: str, api_key: str, ingest: Ingest, names: Names) -> None:
    ak = names("AK-47")
    ingest((ak, "ask", "50"))
    steps = client.follow(interval=0.02, stream_retry=0.05)
    try:
        # The service runs with one live subscription per account: holding it refuses follow()'s (429
        # too_many_subscriptions), so the changes come from the feed.
        with httpx.Client(timeout=30) as raw, raw.stream("GET", f"{base_url}/prices/changes/stream", headers={"X-API-Key": api_key, "Accept": "text/event-stream"}) as held:
            assert held.status_code == 200
            step = next(steps)
            assert step.via == "export"
            ingest((ak, "ask", "51"))
            step = until(steps, current_seq(client), step, lambda s: None)
            assert step.via == "poll"
            assert mine(step, [ak]) == served(client, [ak])
        # The held stream is closed: its slot frees, and a later try of the stream gets it.
        vias: list[str] = []
        for i in range(20):
            ingest((ak, "ask", f"{60 + i}"))
            step = until(steps, current_seq(client), step, lambda s: vias.append(s.via))
            assert mine(step, [ak]) == served(client, [ak])
            if "stream" in vias:
                break
        assert "stream" in vias
        assert set(vias) <= {"poll", "stream"}
    finally:
        steps.close()


def test_the_ndjson_export_is_read_a_quote_at_a_time_and_kept_by_its_etag(base_url: str, api_key: str, ingest: Ingest, names: Names) -> None:
    ak = names("AK-47")
    ingest((ak, "ask", "12"))
    with QuotegateClient(base_url, api_key) as client:
        with client.export_lines("all") as export:
            assert export.not_modified is False and export.etag.startswith('"')
            lines = list(export)
        assert lines and all({"market_hash_name", "market_code", "side"} <= line.keys() for line in lines)
        assert all(isinstance(line["market_price_amount"], (str, type(None))) for line in lines)  # decimals as strings
        with client.export_lines("all", if_none_match=export.etag) as again:
            assert again.not_modified is True and again.etag == export.etag
            assert list(again) == []
        # The balance after one more metered call (1 credit) shows what the export cost: the download only (10).
        client.get_prices(market_hash_name=ak)
        assert client.meta is not None and client.meta["credit"]["remaining"] == 1000 - 10 - 1

"""Fixtures of the tests against a served instance (README, Tests): its URL, API keys of distinct accounts (one per
test that needs an account of its own), and ingestion through the ``ingestQuotes`` mutation with a service token.

Environment: ``QUOTEGATE_URL``, ``QUOTEGATE_API_KEYS`` (comma-separated), ``QUOTEGATE_SERVICE_TOKEN``. Missing ones
stop the run with a usage error (exit code 4): these tests never pass without a service.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from quotegate_client import QuotegateClient

REQUIRED = ("QUOTEGATE_URL", "QUOTEGATE_API_KEYS", "QUOTEGATE_SERVICE_TOKEN")


def pytest_configure(config: pytest.Config) -> None:
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        raise pytest.UsageError(f"set {', '.join(missing)}: these tests run against a served instance (README.md, Tests; .ci/python-client)")


@pytest.fixture(scope="session")
def base_url() -> str:
    return os.environ["QUOTEGATE_URL"].rstrip("/")


_keys = iter(k.strip() for k in os.environ.get("QUOTEGATE_API_KEYS", "").split(",") if k.strip())


@pytest.fixture
def api_key() -> str:
    """An API key of an account no other test uses (1,000 credits, its own rate-limit windows)."""
    key = next(_keys, None)
    if key is None:
        raise pytest.UsageError("QUOTEGATE_API_KEYS holds fewer keys than the tests need (8)")
    return key


@pytest.fixture
def client(base_url: str, api_key: str) -> Iterator[QuotegateClient]:
    with QuotegateClient(base_url, api_key) as c:
        yield c


@pytest.fixture
def names() -> Callable[[str], str]:
    """Item names no other test (or run) uses: ``names("AK-47")`` -> ``"AK-47 | t1a2b3c4 (Field-Tested)"``."""
    tag = uuid.uuid4().hex[:8]
    return lambda weapon: f"{weapon} | t{tag} (Field-Tested)"


# Observation times only move forward (an observation not newer than the stored one changes nothing): one clock
# for the whole run, starting an hour back, a second further at each row.
_clock = itertools.count()
_start = datetime.now(UTC) - timedelta(hours=1)

INGEST = "mutation Ingest($q: [SourceQuoteInput!]!) { ingestQuotes(quotes: $q) { received inserted updated skipped } }"


@pytest.fixture(scope="session")
def ingest(base_url: str) -> Iterator[Callable[..., dict[str, Any]]]:
    """``ingest((name, side, price_or_None), ...)``: BUFF163 quotes (CNY) applied in one transaction by the
    service's ``ingestQuotes`` mutation; a None price delists the quote (quantity 0). Returns the mutation's counts."""
    token = os.environ["QUOTEGATE_SERVICE_TOKEN"]
    with httpx.Client(timeout=60) as http:

        def run(*rows: tuple[str, str, str | None]) -> dict[str, Any]:
            quotes = []
            for name, side, price in rows:
                at = (_start + timedelta(seconds=next(_clock))).isoformat().replace("+00:00", "Z")
                quotes.append(
                    {
                        "marketHashName": name,
                        "marketCode": "BUFF163",
                        "providerCode": "BUFF163",
                        "side": side,
                        "currencyCode": "CNY",
                        "price": price,
                        "quantity": 5 if price is not None else 0,
                        "observedAt": at,
                    }
                )
            r = http.post(f"{base_url}/graphql", json={"query": INGEST, "variables": {"q": quotes}}, headers={"Authorization": f"Bearer {token}"})
            body = r.json()
            assert r.status_code == 200 and not body.get("errors"), body
            counts: dict[str, Any] = body["data"]["ingestQuotes"]
            return counts

        yield run

"""Quotegate's Python client: a typed client of the Quotegate API (CS2 marketplace prices and fees) on httpx.

``QuotegateClient(base_url, api_key)``: every REST operation as a typed method (generated from /openapi.json into
``quotegate_client.schema``), GraphQL, the rate limits of each answer, the export kept by its ETag, and ``follow()``:
a local copy of every price kept current over the live change stream, with the polled feed as fallback. README.md
beside pyproject.toml has examples.
"""

from . import schema
from .client import ExportLines, FollowStep, LocalCopy, QuotegateClient, QuotegateError, QuoteKey, quote_key
from .rate_limit import RateLimit, read_rate_limits
from .schema import *  # the contract's types and Operations, listed in schema.__all__

__all__ = ["ExportLines", "FollowStep", "LocalCopy", "QuoteKey", "QuotegateClient", "QuotegateError", "RateLimit", "quote_key", "read_rate_limits"]
__all__ += schema.__all__
__version__ = "0.1.0"

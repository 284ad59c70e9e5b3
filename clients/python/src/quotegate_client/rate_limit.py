"""The service's rate-limit fields (IETF draft-ietf-httpapi-ratelimit-headers; the service README, "Rate limits").

``RateLimit-Policy`` lists every policy that applied to a request, each ``"<operationId>";q=<limit>;w=<window s>``,
and ``RateLimit`` the state of each after it, ``"<operationId>";r=<remaining>;t=<seconds to reset>``. A GraphQL
answer that ran several metered fields lists one policy per operation, so both are RFC 8941 structured-field lists;
this module parses them as such (strings, tokens, integers, decimals and booleans, with parameters; an inner list
or a malformed field makes the whole field unusable, as RFC 8941 asks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RateLimit", "Token", "parse_list", "read_rate_limits"]


@dataclass(frozen=True)
class RateLimit:
    """The state of one rate-limit policy after an answer."""

    #: The policy's name: the catalogue operation id it limits (e.g. ``getPrices``).
    policy: str
    #: Requests allowed per window (``q``).
    limit: int
    #: The window, in seconds (``w``).
    window_seconds: int
    #: Requests left in the current window (``r``).
    remaining: int
    #: Seconds until the window frees a request (``t``).
    reset_seconds: int


_KEY = re.compile(r"[a-z*][a-z0-9_.*-]*")
_TOKEN = re.compile(r"[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*")
_NUMBER = re.compile(r"-?\d{1,15}(\.\d{1,3})?")



class Token(str):
    """An RFC 8941 token (a bare word, not a quoted string)."""


BareItem = str | int | float | bool


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def bare(self) -> BareItem:
        t, p = self.text, self.pos
        if p >= len(t):
            raise ValueError("an item is missing")
        c = t[p]
        if c == '"':
            out: list[str] = []
            p += 1
            while p < len(t):
                ch = t[p]
                if ch == "\\":
                    if p + 1 >= len(t) or t[p + 1] not in '"\\':
                        raise ValueError("a bad escape in a string")
                    out.append(t[p + 1])
                    p += 2
                elif ch == '"':
                    self.pos = p + 1
                    return "".join(out)
                elif not (" " <= ch <= "~"):
                    raise ValueError("a character a string may not hold")
                else:
                    out.append(ch)
                    p += 1
            raise ValueError("a string without its closing quote")
        if c == "?":
            if t[p + 1 : p + 2] not in ("0", "1"):
                raise ValueError("a bad boolean")
            self.pos = p + 2
            return t[p + 1] == "1"
        m = _NUMBER.match(t, p) if (c == "-" or c.isdigit()) else None
        if m:
            self.pos = m.end()
            return float(m.group(0)) if m.group(1) else int(m.group(0))
        m = _TOKEN.match(t, p)
        if m:
            self.pos = m.end()
            return Token(m.group(0))
        raise ValueError(f"an unexpected character at {p}")

    def params(self) -> dict[str, BareItem]:
        out: dict[str, BareItem] = {}
        while self.pos < len(self.text) and self.text[self.pos] == ";":
            self.pos += 1
            self.ws()
            m = _KEY.match(self.text, self.pos)
            if not m:
                raise ValueError("a bad parameter name")
            self.pos = m.end()
            value: BareItem = True
            if self.pos < len(self.text) and self.text[self.pos] == "=":
                self.pos += 1
                value = self.bare()
            out[m.group(0)] = value
        return out


def parse_list(text: str) -> list[tuple[BareItem, dict[str, BareItem]]]:
    """An RFC 8941 list of items with parameters; raises ValueError when `text` is not one (inner lists included)."""
    p = _Parser(text)
    p.ws()
    out: list[tuple[BareItem, dict[str, BareItem]]] = []
    while p.pos < len(text):
        if text[p.pos] == "(":
            raise ValueError("an inner list")
        item = p.bare()
        out.append((item, p.params()))
        p.ws()
        if p.pos >= len(text):
            break
        if text[p.pos] != ",":
            raise ValueError(f"a comma expected at {p.pos}")
        p.pos += 1
        p.ws()
        if p.pos >= len(text):
            raise ValueError("a trailing comma")
    return out


def _named(text: str | None) -> dict[str, dict[str, int]]:
    """Each string item of the list `text` (policy names are sf-strings) with its integer parameters."""
    out: dict[str, dict[str, int]] = {}
    if not text:
        return out
    try:
        items = parse_list(text)
    except ValueError:
        return out  # not a structured list: no usable state
    for value, params in items:
        if isinstance(value, str) and not isinstance(value, Token):
            out[value] = {k: v for k, v in params.items() if isinstance(v, int) and not isinstance(v, bool)}
    return out


def read_rate_limits(headers: Mapping[str, str]) -> list[RateLimit]:
    """Every policy of an answer's ``RateLimit-Policy``, in its order, joined with its ``RateLimit`` state by name.

    A policy without a state, or a field that is not a structured list, is left out; an answer without the fields
    gives an empty list. `headers` is any case-insensitive mapping (httpx's ``Response.headers``).
    """
    policies = _named(headers.get("ratelimit-policy"))
    states = _named(headers.get("ratelimit"))
    out: list[RateLimit] = []
    for name, p in policies.items():
        s = states.get(name)
        if s is None or "q" not in p or "r" not in s:
            continue
        out.append(RateLimit(policy=name, limit=p["q"], window_seconds=p.get("w", 0), remaining=s["r"], reset_seconds=s.get("t", 0)))
    return out

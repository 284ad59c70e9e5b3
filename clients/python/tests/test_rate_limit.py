"""The RateLimit fields parsed as RFC 8941 lists (no service needed)."""

from __future__ import annotations

import pytest

from quotegate_client import read_rate_limits
from quotegate_client.rate_limit import Token, parse_list


def test_every_policy_is_joined_with_its_state_by_name() -> None:
    headers = {
        "ratelimit-policy": '"getPrices";q=120;w=60, "getPriceChanges";q=120;w=60',
        "ratelimit": '"getPriceChanges";r=118;t=0, "getPrices";r=117;t=1',
    }
    assert [(p.policy, p.limit, p.window_seconds, p.remaining, p.reset_seconds) for p in read_rate_limits(headers)] == [
        ("getPrices", 120, 60, 117, 1),
        ("getPriceChanges", 120, 60, 118, 0),
    ]


def test_strings_tokens_numbers_and_booleans() -> None:
    assert parse_list('tok;a=?1, "q\\"s";b=1.5;c, -7') == [(Token("tok"), {"a": True}), ('q"s', {"b": 1.5, "c": True}), (-7, {})]
    assert isinstance(parse_list("tok")[0][0], Token)


@pytest.mark.parametrize("text", ['"a";q=1,', '("a" "b")', '"unterminated', '"a" "b"', '"a";Q=1'])
def test_a_field_that_is_not_a_list_gives_no_state(text: str) -> None:
    with pytest.raises(ValueError):
        parse_list(text)
    assert read_rate_limits({"ratelimit-policy": text, "ratelimit": '"a";r=1;t=1'}) == []


def test_a_policy_without_state_is_left_out_and_no_fields_give_none() -> None:
    assert read_rate_limits({"ratelimit-policy": '"a";q=1;w=1, "b";q=2;w=1', "ratelimit": '"b";r=1;t=0'})[0].policy == "b"
    assert read_rate_limits({}) == []

"""The regexes that name topics for Cruise Control match exactly the named topics (tests/kafka/test_topic_regex_java.py
checks the same in Java's dialect, Cruise Control's)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from services.adapters.cruise_control.topic_names import all_topics_but, compact_topic_regex, topic_regex

# A small alphabet makes shared prefixes, suffixes and neighbouring characters (ranges) likely.
NAMES = st.sets(st.text(alphabet="ab019._-", min_size=1, max_size=6), min_size=1, max_size=40)


def near(names: set[str]) -> set[str]:
    """Names a wrong regex would likely take too: prefixes, extensions and one-character changes of the named."""
    out = set()
    for name in names:
        out.update(name[:i] for i in range(len(name)))
        out.update(name + ch for ch in "a0._-")
        out.update(name[:i] + ch + name[i + 1:] for i in range(len(name)) for ch in "ab2.-")
    return out


@settings(max_examples=300, deadline=None)
@given(NAMES)
def test_the_compact_regex_matches_exactly_the_named_topics(names: set[str]) -> None:
    pattern = re.compile(compact_topic_regex(names))
    for candidate in names | near(names):
        assert bool(pattern.fullmatch(candidate)) == (candidate in names), candidate


@settings(max_examples=100, deadline=None)
@given(NAMES)
def test_all_topics_but_excludes_every_other_topic(names: set[str]) -> None:
    pattern = re.compile(all_topics_but(names))
    for candidate in names | near(names):
        assert bool(pattern.fullmatch(candidate)) == (candidate not in names), candidate


def test_names_of_one_scheme_share_prefixes_and_character_classes() -> None:
    assert compact_topic_regex(f"bench-{i:05d}" for i in range(10_000)) == r"bench\-0[0-9][0-9][0-9][0-9]"
    assert compact_topic_regex(["a", "ab", "abc", "b.c", "b-c", "x"]) == r"a(?:bc?)?|b[\-\.]c|x"
    assert compact_topic_regex(["orders.eu", "orders.us"]) == r"orders\.(?:eu|us)"


def test_the_plain_alternation_is_what_the_json_body_carries() -> None:
    # Cruise Control's refusals quote it back; the isolation of a refused batch compares it to its own.
    assert topic_regex(["x-y", "a.c", "b_z"]) == r"a\.c|b_z|x\-y"

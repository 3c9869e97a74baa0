"""The regexes Ballast sends Cruise Control mean in Java's dialect (Cruise Control's ``Pattern.matches``) what they
mean in Python's: the same names match, and only the named ones (tests/unit/test_topic_names.py checks the Python
side over many more random sets)."""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

from services.adapters.cruise_control.topic_names import all_topics_but, compact_topic_regex, topic_regex
from tests.unit.test_topic_names import near

JAVA_SOURCE = Path(__file__).parent / "java" / "RegexMatches.java"


def _java_matches(cases: list[tuple[str, list[str]]]) -> list[bool]:
    text = "".join(regex + "\n" + "".join(name + "\n" for name in names) + "\n" for regex, names in cases)
    result = subprocess.run(["java", str(JAVA_SOURCE)], input=text, capture_output=True, text=True, timeout=120,
                            check=True)
    return [line == "1" for line in result.stdout.splitlines()]


def test_java_matches_exactly_the_names_python_does() -> None:
    rng = random.Random(20261126)
    cases = []
    for _ in range(200):
        names = {"".join(rng.choices("ab019._-", k=rng.randint(1, 6))) for _ in range(rng.randint(1, 30))}
        candidates = sorted((names | near(names)) - {""})  # an empty line ends a block
        for regex in (compact_topic_regex(names), all_topics_but(names), topic_regex(names)):
            cases.append((regex, candidates))
    java = _java_matches(cases)
    python = [bool(re.fullmatch(regex, name)) for regex, names in cases for name in names]
    assert len(java) == len(python) > 10_000
    differing = [(regex, name) for (regex, name), j, p in
                 zip(((r, n) for r, names in cases for n in names), java, python) if j != p]
    assert not differing, differing[:5]
    assert any(java) and not all(java)

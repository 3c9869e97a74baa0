"""Regexes that name an exact set of topics, for Cruise Control's topic parameters.

Cruise Control takes topics as a regex matched against whole names (Java's ``matches``). Ballast names its topics
one by one, so every regex here matches exactly the given names and nothing else. Every character outside
[A-Za-z0-9_] is backslash-escaped, which means the literal character in both Java's regex dialect (Cruise Control)
and Python's (the simulator); the constructs used (``(?:)``, ``|``, ``?``, ``[...]``, ``(?!)``) mean the same in both.
"""

from __future__ import annotations

from collections.abc import Iterable


def topic_regex(topics: Iterable[str]) -> str:
    """An alternation of the escaped names, sorted (stable, comparable requests; ``a.c`` never matches ``abc``)."""
    return "|".join(_escape(name) for name in sorted(topics))


def compact_topic_regex(topics: Iterable[str]) -> str:
    """The same set as ``topic_regex``, written as a trie whose branches with the same rest share a character class:
    ``orders-0[0-9]|orders-1[0-4]`` rather than fifteen names. Where names share prefixes and suffixes, as topic names
    of one naming scheme do, it is many times shorter; for a request that carries the names in its URL, that is how
    many topics fit in one request."""
    trie: dict = {}
    for name in topics:
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[_END] = True
    return _render(trie)[0] if trie else "(?!)"


def all_topics_but(topics: Iterable[str]) -> str:
    """A regex matching every topic name except these (for ``excluded_topics``: Cruise Control matches it against
    whole names, as Java's ``matches``; a negative lookahead works alike in Java and Python)."""
    return f"(?!(?:{compact_topic_regex(topics)})$).*"


_END = ""  # the trie key marking the end of a name (no name character is empty)


def _render(node: dict) -> tuple[str, bool]:
    """The regex for the suffixes below ``node``, and whether it is an alternation at its top level: branches are
    grouped by what follows their first character; a chain of single children is written as its literal run."""
    run = []
    while len(node) == 1 and _END not in node:
        (ch, node), = node.items()
        run.append(_escape(ch))
    literal = "".join(run)
    by_rest: dict[str, list[str]] = {}
    for ch, child in node.items():
        if ch != _END:
            rest, alternation = _render(child)
            by_rest.setdefault(f"(?:{rest})" if alternation else rest, []).append(ch)
    branches = [_char_class(chars) + rest for rest, chars in sorted(by_rest.items(), key=lambda item: item[1])]
    if _END in node:
        if not branches:
            return literal, False
        optional = branches[0] + "?" if len(branches) == 1 and _atom(branches[0]) else f"(?:{'|'.join(branches)})?"
        return literal + optional, False
    if len(branches) == 1:
        return literal + branches[0], False
    if literal:
        return f"{literal}(?:{'|'.join(branches)})", False
    return "|".join(branches), True


def _atom(regex: str) -> bool:
    """One character or one character class: a quantifier applies to all of it."""
    return len(regex) == 1 or (len(regex) == 2 and regex[0] == "\\") or (
        regex.startswith("[") and regex.endswith("]") and regex.count("]") == 1)


def _char_class(chars: list[str]) -> str:
    if len(chars) == 1:
        return _escape(chars[0])
    ordered = sorted(chars)
    parts, start = [], 0
    for i in range(1, len(ordered) + 1):
        if i < len(ordered) and ord(ordered[i]) == ord(ordered[i - 1]) + 1 and _kind(ordered[i]) == _kind(ordered[i - 1]):
            continue
        run = ordered[start:i]
        parts.append(f"{run[0]}-{run[-1]}" if len(run) >= 3 and _kind(run[0]) else "".join(_escape(c) for c in run))
        start = i
    return "[" + "".join(parts) + "]"


def _kind(ch: str) -> str:
    """Ranges stay within digits, lower-case or upper-case ASCII letters (no surprises between them)."""
    if "0" <= ch <= "9":
        return "digit"
    if "a" <= ch <= "z":
        return "lower"
    if "A" <= ch <= "Z":
        return "upper"
    return ""


def _escape(name: str) -> str:
    return "".join(ch if (ch.isascii() and ch.isalnum()) or ch == "_" else "\\" + ch for ch in name)

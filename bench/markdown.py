"""Writing a benchmark's section into BENCHMARKS.md, replacing the previous run of the same section."""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, section: str) -> None:
    header = section.splitlines()[0]
    text = path.read_text() if path.exists() else "# Benchmarks\n\nEach section names the command that reproduces it.\n"
    if header in text:
        start = text.index(header)
        end = text.find("\n## ", start + len(header))
        text = text[:start] + section + (text[end + 1:] if end >= 0 else "")
    else:
        text = text.rstrip() + "\n\n" + section
    path.write_text(text)

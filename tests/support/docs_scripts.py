"""Scripts the documentation shows, written out as they are printed, so tests run the very
text a reader copies (and the page cannot drift from what works)."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def write_python_block(page: str, target: Path) -> Path:
    """Write the first ```python block of `docs/<page>` to `target`; return `target`.

    Raises:
        ValueError: the page holds no ```python block.
    """
    text = (DOCS / page).read_text()
    opening = "```python\n"
    if opening not in text:
        raise ValueError(f"docs/{page} holds no ```python block")
    target.write_text(text.split(opening, 1)[1].split("```", 1)[0])
    return target

"""The manual holds together: every relative link of README.md and docs/*.md reaches a file (and, into a
Markdown file, a heading), every docs page is linked from the README and named in `forge --help`'s
epilogue, the README stays a ten-minute read, and it shows the test command .ci/run relies on. Pure
text: nothing is imported or run."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
CLI_ENTRY = ROOT / "forge_core" / "cli" / "__init__.py"  # where the top-level epilogue lists the pages
README_MAX_LINES = 420
TEST_COMMAND = "bash scripts/test.sh"  # .ci/run calls exactly the README's test command

FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1", re.S | re.M)  # fenced code blocks
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)  # inline code
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # [text](target) and ![alt](target)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def prose(text: str) -> str:
    """The text without code blocks and code spans (a link shown as code is not a link)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation other than '-' and '_' dropped, spaces to
    '-' (code marks and emphasis are punctuation, so they drop out too)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text only
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    result = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def relative_links(path: Path) -> list[str]:
    """The link targets of a Markdown file that point inside the repository."""
    targets = LINK.findall(prose(path.read_text()))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]  # http:, mailto:, ...


def test_slug_follows_github() -> None:
    assert slug("Running Stage 0 at scale") == "running-stage-0-at-scale"
    assert slug("Asking one question: `forge ask`") == "asking-one-question-forge-ask"
    assert slug("Stage 0 / Stage 1") == "stage-0--stage-1"
    assert slug("Arms, evidence and prompts") == "arms-evidence-and-prompts"
    assert slug("snake_case and dash-ed") == "snake_case-and-dash-ed"


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(path: Path) -> None:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not destination.exists():
            broken.append(f"{target}: no file {destination.relative_to(ROOT)}")
        elif anchor and destination.suffix == ".md" and unquote(anchor) not in anchors(destination):
            broken.append(f"{target}: no heading '#{anchor}' in {destination.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(README.parent / unquote(t.partition("#")[0])).resolve() for t in relative_links(README)}
    missing = [str(page.relative_to(ROOT)) for page in DOCS if page.resolve() not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


def test_every_docs_page_is_named_in_the_help_epilogue() -> None:
    entry = CLI_ENTRY.read_text()
    missing = [str(page.relative_to(ROOT)) for page in DOCS if f'"{page.relative_to(ROOT).as_posix()}"' not in entry]
    assert not missing, f"docs pages missing from `forge --help`'s epilogue ({CLI_ENTRY.name}): {missing}"


def test_every_docs_page_links_back_to_the_readme() -> None:
    missing = [page.name for page in DOCS if "../README.md" not in relative_links(page)]
    assert not missing, f"docs pages without a link back to the README: {missing}"


def test_the_readme_is_a_ten_minute_read() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}): move some to docs/"


def test_the_readme_shows_the_test_command() -> None:
    commands = [line.split("#")[0].strip() for line in README.read_text().splitlines()]
    assert TEST_COMMAND in commands, f"README.md has no line running `{TEST_COMMAND}` (.ci/run runs exactly it)"

"""Every documented command runs: each `forge` command that README.md or a page of docs/ marks as
printing a stored result is run on a fresh demo store (`forge data import && forge store load-demo`)
(the session's `offline_demo`, whose runs tests/cli/test_stored_results.py reads too: a command both
check runs once) and must exit 0 and print that result without training and without calling a host, both counted:
no table of the store gains or loses a row (checkpoints, crossfit runs and results, jobs, ...), and
the embedded hosts' announced server is a counting test double that receives no request.

The mark, an HTML comment (invisible once rendered), right before the command it marks:

    (<!-- stored-result: FIGURE; FIGURE -->`forge eval crossfit --warm-arms 3 ...`)   inline
    <!-- stored-result: FIGURE; FIGURE -->                                             a block
    ```bash
    forge ...
    forge ...
    ```

Inline, the mark holds for the code span right after it (which may wrap onto the next line), and
the command must print every FIGURE. Before a fenced block (on the line above it) it holds for
every line of the block, one command a line, and the i-th FIGURE is what the i-th command prints.
A FIGURE is one or more words that one line of the output must hold together: a word with a
digit in it that reads as a number matches any number on the line that rounds to it (`0.262`
matches 0.26191...), any other word matches as text. A `--json` output is read as one
`path.to.key: value` line per value (`policies.forge_full.macro_utility: 0.2619...`). Every word
with a digit in it must also be on the page outside the marks: a mark restates what its page
says, it cannot make a claim of its own. Commands are run once each, however many pages mark them.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from forge_core.hosts.embedded import running_server
from forge_core.hosts.registry import BUILTIN_HOSTS

from support.offline_forge import ForgeRun, OfflineDemo

ROOT = Path(__file__).resolve().parent.parent
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

MARK = re.compile(r"(?<!`)<!-- stored-result:(?P<figures>[^>]*?)-->")  # not one quoted as code, as in README.md
INLINE = re.compile(r"[ \t]*`(?P<command>[^`]+)`")  # the code span right after a mark (it may wrap)
BLOCK = re.compile(r"[ \t]*\n```[\w-]*\n(?P<body>.*?)\n```", re.S)  # a fenced block on the next line
NUMBER_WORD = re.compile(r"[+-]?\d[\d,]*(?:\.\d+)?%?")  # a figure's word that is a number
NUMBERS = re.compile(r"[+-]?\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?")  # numbers printed on an output line
PLACEHOLDER = re.compile(r"\.\.\.|[\[\]|<>]|(?:^|\s)[A-Z]{1,3}(?:\s|$)")  # `...`, `[--x]`, `a|b`, `X`


@dataclass
class MarkedCommand:
    """One command as the docs mark it: its arguments, the figures it must print and where."""

    args: tuple[str, ...]
    figures: list[str] = field(default_factory=list)
    places: list[str] = field(default_factory=list)


def page_text(text: str) -> str:
    """A page without its marks: what a reader sees, where a mark's figures must also be."""
    return MARK.sub("", text)


def line_of(text: str, offset: int) -> int:
    """The line number (from 1) of an offset in a text."""
    return text.count("\n", 0, offset) + 1


def block_commands(body: str, first_line: int) -> list[tuple[int, str]]:
    """(line number, command) of each command of a fenced block: one a line, a line ending in a
    backslash continued on the next."""
    commands: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(body.splitlines(), first_line):
        if not line.strip() and pending is None:
            continue
        start, text = pending or (number, "")
        text = f"{text} {line.strip()}".strip()
        if text.endswith("\\"):
            pending = (start, text[:-1].strip())
            continue
        pending = None
        commands.append((start, text))
    if pending is not None:
        commands.append(pending)
    return commands


def marks(path: Path) -> Iterator[tuple[str, list[str], list[str] | str]]:
    """(place, commands, figures) of every mark of a page, or (place, [], problem) for a mark that
    marks no command as the convention says."""
    text = path.read_text()
    for match in MARK.finditer(text):
        place = f"{path.relative_to(ROOT)}:{line_of(text, match.start())}"
        figures = [figure.strip() for figure in match["figures"].split(";") if figure.strip()]
        block = BLOCK.match(text, match.end())
        inline = INLINE.match(text, match.end())
        if block:
            commands = block_commands(block["body"], line_of(text, block.start("body")))
            if len(commands) != len(figures):
                yield place, [], f"{len(commands)} commands in the block but {len(figures)} figures"
                continue
            for (line, command), figure in zip(commands, figures):
                yield f"{path.relative_to(ROOT)}:{line}", [command], [figure]
        elif inline:
            yield place, [" ".join(inline["command"].split())], figures
        else:
            yield place, [], "no code span or fenced block right after the mark"


def collect() -> tuple[list[MarkedCommand], list[str]]:
    """The marked commands of README.md and docs/*.md, each once with every figure and place marked
    for it; and the problems found (a mark without a command, not a `forge` command, a placeholder
    left in it, a figure the page does not say)."""
    commands: dict[tuple[str, ...], MarkedCommand] = {}
    problems = []
    for path in PAGES:
        seen = page_text(path.read_text())
        for place, lines, figures in marks(path):
            if isinstance(figures, str):
                problems.append(f"{place}: {figures}")
                continue
            if not figures:
                problems.append(f"{place}: a mark without a figure")
            for line in lines:
                if not line.startswith("forge ") or PLACEHOLDER.search(line):
                    problems.append(f"{place}: not a `forge` command to run as written: {line}")
                    continue
                args = tuple(shlex.split(line)[1:])
                marked = commands.setdefault(args, MarkedCommand(args))
                marked.places.append(place)
                for figure in figures:
                    problems += [f"{place}: '{word}' of the figure '{figure}' is not on the page"
                                 for word in figure.split() if re.search(r"\d", word) and word not in seen]
                    if figure not in marked.figures:
                        marked.figures.append(figure)
    return list(commands.values()), problems


MARKED, PROBLEMS = collect()


def option(args: tuple[str, ...], name: str) -> str | None:
    """The value of one option of a command, if it is given."""
    return args[args.index(name) + 1] if name in args[:-1] else None


def tiered(commands: list[MarkedCommand]) -> list:
    """The commands as test parameters: the first of each kind (its subcommand, stage and accounting)
    in the default suite, its siblings (the same code path on other stored runs, 5-9 s each) in the
    e2e tier, as tests/cli/test_stored_results.py does for the stored crossfit runs."""
    params, seen = [], set()
    for command in commands:
        words = tuple(word for word in command.args[:2] if not word.startswith("-"))
        kind = (words, option(command.args, "--stage"), option(command.args, "--accounting"))
        params.append(command if kind not in seen else pytest.param(command, marks=pytest.mark.e2e))
        seen.add(kind)
    return params


def output_lines(stdout: str) -> list[str]:
    """The output as lines; a JSON object as one `path: value` line per value."""
    try:
        document = json.loads(stdout)
    except ValueError:
        return stdout.splitlines()
    lines: list[str] = []

    def walk(value: object, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}.{index}")
        else:
            lines.append(f"{path}: {value}")
    walk(document, "")
    return lines


def _as_number(word: str) -> float:
    return float(word.replace(",", "").rstrip("%"))


def word_on_line(word: str, line: str) -> bool:
    """A figure's word on one output line: a number as any number there that rounds to it, else text."""
    if not NUMBER_WORD.fullmatch(word):
        return word in line
    decimals = len(word.rstrip("%").partition(".")[2])
    wanted = f"{abs(_as_number(word)):.{decimals}f}", _as_number(word) < 0
    for printed in NUMBERS.findall(line):
        value = float(printed.replace(",", ""))
        rounded = f"{abs(value):.{decimals}f}"
        if rounded == wanted[0] and (value < 0) == wanted[1] or rounded == wanted[0] == f"{0:.{decimals}f}":
            return True
    return False


def prints(figure: str, lines: list[str]) -> bool:
    """Whether one line of the output holds every word of the figure."""
    return any(all(word_on_line(word, line) for word in figure.split()) for line in lines)


def test_every_mark_marks_a_command_its_page_bears_out() -> None:
    assert MARKED, "no `<!-- stored-result: ... -->` mark in README.md or docs/"
    assert not PROBLEMS, "\n".join(PROBLEMS)


def test_a_host_call_would_reach_the_counting_double(offline_demo: OfflineDemo,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_CACHE_DIR", str(offline_demo.cache_dir))
    for host in BUILTIN_HOSTS.values():
        server = running_server(host.model)
        assert server is not None and server.base_url == offline_demo.host.base_url, host.name


def describe(run: ForgeRun) -> str:
    return f"`forge {' '.join(run.args)}` (exit {run.returncode}): {run.stderr[-1500:]}"


@pytest.mark.parametrize("command", tiered(MARKED), ids=lambda command: " ".join(command.args))
def test_a_documented_command_prints_its_stored_result(command: MarkedCommand, offline_demo: OfflineDemo) -> None:
    run = offline_demo.run(command.args)  # once a session: tests/cli/test_stored_results.py reads the same runs
    where = ", ".join(command.places)
    assert run.returncode == 0, f"{where}: {describe(run)}"
    assert run.host_calls == 0, f"{where}: `forge {' '.join(command.args)}` called a host {run.host_calls} times"
    assert not run.rows_changed, f"{where}: `forge {' '.join(command.args)}` trained or wrote: {run.rows_changed}"
    lines = output_lines(run.stdout)
    missing = [figure for figure in command.figures if not prints(figure, lines)]
    assert not missing, f"{where}: `forge {' '.join(command.args)}` did not print {missing}:\n{run.stdout[-3000:]}"

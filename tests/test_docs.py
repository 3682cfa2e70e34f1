"""Every command the documentation shows is a valid invocation, and every relative link resolves.

Pages: README.md, docs/*.md, reports/README.md and infra/README.md.  Commands come from fenced code
blocks marked ``sh``, ``bash``, ``shell`` or ``console`` (in ``console`` only the ``$ `` lines) and from
inline code that starts with ``skewbench ``, ``.venv/bin/skewbench `` or ``make ``.  Comments
(``# ...``) go, line continuations (``\\``) join, and each ``[optional]`` part is checked on its own
beside the command without any (``[--quick | --full]``: each alternative).  Then

* ``skewbench ...`` parses with :func:`skewbench.cli.build_parser` (argparse opens no files), its scheme
  names are registered, its workload SPECs name a known workload and its parameters, its study files
  under ``bench/studies/`` exist and its ``--only`` names are experiments of ``make study``;
* ``make TARGET [VAR=...]`` names targets of the Makefile (or infra/cluster.mk) and variables they use;
  ``STUDIES`` names study files;
* ``python -m skewbench...`` parses with the module's own argparse parser, when it has one, or else
  the module exists;
* anything else (git, pip, ssh, terraform, ...) is skipped.

Inline code may name a command without its required arguments (`skewbench bench`): it passes if the
only complaint is a missing required argument and every option it gives is one the command has.
Every page must hold at least one checked command, so that a broken extraction fails here too.

Links: every relative link of a page (``[text](path)``, images too) names an existing file, and an
anchor into a Markdown file (``path.md#heading``) names one of its headings — so a link to a report
folder that left the tree fails here.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")),
         "reports/README.md", "infra/README.md"]
SHELL_LANGS = {"sh", "bash", "shell", "console"}
MAKEFILES = ("Makefile", "infra/cluster.mk")
SEPARATORS = {"&&", "||", ";", "|"}


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str  # as shown, comments and continuations resolved
    inline: bool  # from inline code: may leave out required arguments

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}:{self.text[:70]}"


# -- extraction ----------------------------------------------------------------------------------------------

FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")


def _fenced(text: str) -> tuple[list[tuple[int, str, list[str]]], str]:
    """The fenced blocks as (first line number, language, lines), and the text with them blanked."""
    blocks, outside, current = [], [], None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if current is None and match:
            current = (number + 1, match.group(2).lower(), [], match.group(1))
            outside.append("")
        elif current is not None and line.strip().startswith(current[3]) and not line.strip()[len(current[3]):]:
            blocks.append(current[:3])
            current = None
            outside.append("")
        elif current is not None:
            current[2].append(line)
            outside.append("")
        else:
            outside.append(line)
    assert current is None, "an unclosed code fence"
    return blocks, "\n".join(outside)


def _strip_comment(line: str) -> str:
    """``line`` without a shell comment: a ``#`` that starts a word outside quotes."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _block_commands(lang: str, lines: list[str]) -> list[tuple[int, str]]:
    """(offset in the block, command) for every command of a shell block."""
    commands, pending, start = [], "", 0
    for offset, raw in enumerate(lines):
        if not pending:
            if lang == "console":
                if not raw.lstrip().startswith("$ "):
                    continue
                raw = raw.lstrip()[2:]
            start = offset
        line = _strip_comment(raw).lstrip() if pending else _strip_comment(raw)
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command:
            commands.append((start, command))
    if pending.strip():
        commands.append((start, pending.strip()))
    return commands


INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
INLINE_START = re.compile(r"^(\.venv/bin/)?skewbench |^make ")


def commands_of(page: str) -> list[Command]:
    text = (ROOT / page).read_text()
    blocks, outside = _fenced(text)
    found = [Command(page, first + offset, command, inline=False)
             for first, lang, lines in blocks if lang in SHELL_LANGS
             for offset, command in _block_commands(lang, lines)]
    for match in INLINE.finditer(outside):
        code = " ".join(match.group(1).replace("\\|", "|").split())
        if INLINE_START.match(code):
            found.append(Command(page, outside.count("\n", 0, match.start()) + 1, code, inline=True))
    return found


def _groups(text: str) -> list[tuple[int, int]]:
    """(start, end) of every top-level ``[...]`` group."""
    spans, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            if depth == 0:
                start = i
            depth += 1
        elif char == "]" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


def variants(text: str) -> list[str]:
    """The command without its ``[optional]`` parts, then with each part (each ``|`` alternative) alone."""
    spans = _groups(text)
    if not spans:
        return [text]

    def without(keep: int | None = None, alternative: str = "") -> str:
        out, last = [], 0
        for i, (a, b) in enumerate(spans):
            out.append(text[last:a])
            if i == keep:
                out.append(alternative)
            last = b
        out.append(text[last:])
        return " ".join("".join(out).split())

    result = [without()]
    for i, (a, b) in enumerate(spans):
        inner = text[a + 1:b - 1]
        alternatives = inner.split(" | ") if not _groups(inner) else [inner]
        for alternative in alternatives:
            result.extend(variants(without(i, alternative.strip())))
    return list(dict.fromkeys(result))


# -- checks ----------------------------------------------------------------------------------------------------

class Invalid(AssertionError):
    pass


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, argparse's complaint raised as :class:`Invalid`."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            return parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code in (0, None):  # --help
            return argparse.Namespace(command=None)
        lines = err.getvalue().strip().splitlines()
        raise Invalid(lines[-1] if lines else f"exit {exc.code}") from None


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name)
    return None


def _check_workload(spec: str) -> None:
    from skewbench.workloads import available

    kind, _, params = spec.partition(":")
    known = available()
    if kind not in known:
        raise Invalid(f"unknown workload {kind!r} in {spec!r}")
    for item in filter(None, params.split(",")):
        name = item.partition("=")[0]
        if name not in known[kind][1]:
            raise Invalid(f"workload {kind!r} has no parameter {name!r} ({spec!r})")


def check_skewbench(argv: list[str], inline: bool) -> None:
    from skewbench.cli import build_parser

    parser = build_parser()
    try:
        args = _parse(parser, argv)
    except Invalid as exc:
        if not (inline and "the following arguments are required" in str(exc)):
            raise
        sub = _subparser(parser, argv[0]) if argv else None
        if sub is None:
            raise
        known = {s for action in sub._actions for s in action.option_strings}
        unknown = [a.split("=")[0] for a in argv[1:] if a.startswith("--") and a.split("=")[0] not in known]
        if unknown:
            raise Invalid(f"unrecognized arguments: {' '.join(unknown)}") from None
        return
    import skewbench.schemes  # noqa: F401  (registers every scheme)
    from skewbench.scheme import REGISTRY

    names = [*(getattr(args, "schemes", None) or "").split(","), getattr(args, "scheme", None) or ""]
    for name in filter(None, names):
        if name not in REGISTRY:
            raise Invalid(f"unknown scheme {name!r}")
    if getattr(args, "workload", None):
        _check_workload(args.workload)
    for study in getattr(args, "studies", None) or []:
        if study.startswith("bench/studies/") and not (ROOT / study).is_file():
            raise Invalid(f"no study file {study}")
    if getattr(args, "command", None) == "study" and args.only:
        from skewbench.bench.paper_study import experiments

        unknown = set(args.only.split(",")) - set(experiments(1000))
        if unknown:
            raise Invalid(f"unknown experiments {sorted(unknown)}")


def _makefile_names(paths) -> tuple[set[str], set[str]]:
    """(targets, variables) of the makefiles: rules' targets, and variables set or referenced."""
    targets, variables = set(), set()
    for path in paths:
        text = (ROOT / path).read_text()
        targets |= set(re.findall(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", text, re.M))
        variables |= set(re.findall(r"^([A-Za-z_]\w*)\s*[?:+]?=", text, re.M))
        variables |= set(re.findall(r"\$[({]([A-Za-z_]\w*)[)}]", text))
        variables |= set(re.findall(r"\$\((?:if|strip) \$\(([A-Za-z_]\w*)\)", text))
    return targets, variables


def check_make(argv: list[str]) -> None:
    files, goals, assignments, rest = list(MAKEFILES), [], {}, iter(argv)
    for arg in rest:
        if arg == "-f":
            files = [next(rest)]
            if files == ["Makefile"]:
                files = list(MAKEFILES)  # it includes infra/cluster.mk
        elif arg in ("-C", "-j", "-l"):
            next(rest, None)
        elif arg.startswith("-"):
            continue
        elif re.match(r"^[A-Za-z_]\w*=", arg):
            name, _, value = arg.partition("=")
            assignments[name] = value
        else:
            goals.append(arg)
    targets, variables = _makefile_names(files)
    for goal in goals:
        if goal not in targets:
            raise Invalid(f"no make target {goal!r} in {', '.join(files)}")
    for name in assignments:
        if name not in variables:
            raise Invalid(f"make variable {name} is used by no rule of {', '.join(files)}")
    for study in assignments.get("STUDIES", "").split():
        if not (ROOT / "bench" / "studies" / f"{study}.yaml").is_file():
            raise Invalid(f"STUDIES names {study!r}, which is not bench/studies/{study}.yaml")


class _Parsed(Exception):
    pass


def check_module(module: str, argv: list[str]) -> None:
    if module in ("skewbench", "skewbench.cli"):
        return check_skewbench(argv, inline=False)
    if importlib.util.find_spec(module) is None:
        raise Invalid(f"no module {module}")
    source = Path(importlib.util.find_spec(module).origin).read_text()
    if "argparse" not in source:
        return  # e.g. skewbench.bench.spark.run: a list of files, needs PySpark
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(parser, args=None, namespace=None):
        _parse_original(parser, original, args)
        raise _Parsed

    argparse.ArgumentParser.parse_args = parse_then_stop
    try:
        importlib.import_module(module).main(argv)
    except _Parsed:
        return
    finally:
        argparse.ArgumentParser.parse_args = original
    raise Invalid(f"{module}.main did not parse its arguments")


def _parse_original(parser, original, args) -> None:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            original(parser, args)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise Invalid(err.getvalue().strip().splitlines()[-1]) from None


def check(command: Command) -> bool:
    """Check every variant of the command; False if no checker applies (skipped)."""
    checked = False
    for text in variants(command.text):
        try:
            tokens = shlex.split(text)
        except ValueError as exc:
            raise Invalid(f"not a shell command ({exc})") from None
        parts, current = [], []
        for token in tokens:
            if token in SEPARATORS:
                parts.append(current)
                current = []
            else:
                current.append(token)
        parts.append(current)
        for argv in parts:
            while argv and re.match(r"^[A-Za-z_]\w*=", argv[0]):  # environment assignments
                argv = argv[1:]
            if not argv:
                continue
            program = argv[0].rsplit("/", 1)[-1]
            if program == "skewbench":
                check_skewbench(argv[1:], command.inline)
            elif program == "make":
                check_make(argv[1:])
            elif re.match(r"^python(3(\.\d+)?)?$", program) and argv[1:2] == ["-m"] and len(argv) > 2 \
                    and argv[2].startswith("skewbench"):
                check_module(argv[2], argv[3:])
            else:
                continue
            checked = True
    return checked


COMMANDS = [c for page in PAGES for c in commands_of(page)]


@pytest.mark.parametrize("command", COMMANDS, ids=[c.id for c in COMMANDS])
def test_command_is_a_valid_invocation(command: Command):
    try:
        check(command)
    except Invalid as exc:
        pytest.fail(f"{command.page} line {command.line}: `{command.text}`: {exc}", pytrace=False)


@pytest.mark.parametrize("page", PAGES)
def test_page_shows_a_checked_command(page: str):
    checked = []
    for command in commands_of(page):
        try:
            if check(command):
                checked.append(command)
        except Invalid:
            checked.append(command)  # reported by the test above
    assert checked, f"{page}: no command the checks understand (has the extraction broken?)"


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file (lower case, punctuation dropped, spaces
    to hyphens, ``-1``, ``-2`` ... for repeats)."""
    _, outside = _fenced(path.read_text())
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", outside, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page: str):
    _, outside = _fenced((ROOT / page).read_text())
    outside = INLINE.sub("", outside)
    broken = []
    for match in LINK.finditer(outside):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # http(s):, mailto:
        path, _, anchor = target.partition("#")
        file = (ROOT / page).parent.joinpath(path) if path else ROOT / page
        where = f"line {outside.count(chr(10), 0, match.start()) + 1}: {target}"
        if not file.exists():
            broken.append(where)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(where + " (no such heading)")
    assert not broken, f"{page}: broken links: " + "; ".join(broken)


def test_the_checks_catch_bad_commands():
    """The checkers themselves: each of these must be refused."""
    bad = ["skewbench simulate --workload wp --schemes kg --workers 5",  # no --out
           "skewbench bench bench/studies/nope.yaml --out DIR",
           "skewbench simulate --workload zipf:zz=1 --schemes kg --workers 5 --out x.csv",
           "skewbench run --app wordcount --scheme nope --workers 4 --out DIR",
           "skewbench study --out DIR --only pkg_fig99",
           "make bench ONLY=storm", "make benchmark", "make bench STUDIES=nope",
           "python -m skewbench.bench.paper_study --bogus"]
    for text in bad:
        with pytest.raises(Invalid):
            check(Command("-", 1, text, inline=False))
    with pytest.raises(Invalid):
        check(Command("-", 1, "skewbench bench --engine-modl FILE", inline=True))
    assert check(Command("-", 1, "skewbench bench", inline=True))
    assert variants("skewbench bench S.yaml --out D [--resume] [--quick | --full]") == [
        "skewbench bench S.yaml --out D", "skewbench bench S.yaml --out D --resume",
        "skewbench bench S.yaml --out D --quick", "skewbench bench S.yaml --out D --full"]
    assert _block_commands("sh", ["make a \\", "  B=1   # note", "git status"]) == [(0, "make a B=1"), (2, "git status")]
    assert not check(Command("-", 1, "git show f5a2790 --stat", inline=False))
    assert {"one-run-skewbench-run", "the-clusters-shape"} <= anchors(ROOT / "docs" / "cluster.md") | anchors(
        ROOT / "docs" / "studies.md")

"""Every Python example in README.md and docs/ runs as written."""

import re

import pytest

from doc_examples import PAGES, ROOT, commands, python_blocks, runnable_blocks


def test_readme_has_an_example():
    assert python_blocks(ROOT / "README.md")


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {}
    for code in python_blocks(page):
        exec(compile(code, str(page), "exec"), namespace)


def _shown_in(expected: str, printed: str) -> bool:
    """Whether one printed line holds ``expected``, where ``...`` stands for any text."""
    pattern = ".*?".join(re.escape(piece) for piece in expected.split("..."))
    return any(re.search(pattern, line) for line in printed.splitlines())


@pytest.mark.parametrize("page", [p for p in PAGES
                                  if any(lang == "sh" for lang, _ in runnable_blocks(p))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_page_commands_run(page, tmp_path, monkeypatch, capsys):
    """The python blocks and the ``possibly`` commands of ```sh blocks run in page order (the
    commands read the files the python blocks write); a ```text block right after a command
    is its output: each of its lines but ``...`` must appear in a line the command printed,
    ``...`` within a line standing for any text."""
    from possibly.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {}
    printed = None
    n_commands = 0
    for lang, code in runnable_blocks(page):
        if lang == "python":
            exec(compile(code, str(page), "exec"), namespace)
            printed = None
        elif lang == "sh":
            capsys.readouterr()
            for argv in commands(code):
                assert main(argv) == 0, f"{page.name}: possibly {' '.join(argv)} failed"
                n_commands += 1
            printed = capsys.readouterr().out
        elif printed is not None:  # the expected output of the commands just run
            for line in code.splitlines():
                if line.strip() and line.strip() != "...":
                    assert _shown_in(line.rstrip(), printed), \
                        f"{page.name}: missing output {line!r} in\n{printed}"
            printed = None
    assert n_commands

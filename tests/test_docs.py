"""Every Python example in README.md and docs/ runs as written."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def test_readme_has_an_example():
    assert _blocks(ROOT / "README.md")


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    namespace: dict = {}
    for code in _blocks(page):
        exec(compile(code, str(page), "exec"), namespace)

"""The site's command reference, generated from the commands' own `--help`, and the README as the
site's home page. MkDocs runs this file as a hook (mkdocs.yml `hooks:`): at every build it adds the
page `cli.md`, so the reference is never stale and is not kept in the repository, and `index.md`,
the README with its `docs/` links pointing at the pages beside it. `python docs/gen_cli.py` prints
the reference's Markdown."""

from __future__ import annotations

import re
from pathlib import Path

WIDTH = 100  # the help's terminal width: a code block of the site's theme shows it without wrapping

INTRO = """# Command reference

Every command's `--help`, as the installed fhemark prints it at {width} columns (this page is
generated when the site is built, by `docs/gen_cli.py`). What the commands are for, with examples:
[using fhemark](usage.md).
"""


def command_paths(command, path: tuple[str, ...] = ()):
    """Every command and subcommand's words, depth first in the order the app lists them."""
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from command_paths(sub, (*path, name))


def markdown() -> str:
    import typer.main
    from typer.testing import CliRunner

    from fhemark.cli import app

    parts = [INTRO.format(width=WIDTH)]
    for path in command_paths(typer.main.get_command(app)):
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH), "NO_COLOR": "1"})
        if result.exit_code != 0:
            raise RuntimeError(f"fhemark {' '.join(path)} --help exited {result.exit_code}: {result.output}")
        text = "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())
        parts.append(f"## fhemark {' '.join(path)}".rstrip() + f"\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


def readme_as_home(text: str) -> str:
    """The README's links to docs/PAGE are the site's links to PAGE."""
    return re.sub(r"\]\(docs/", "](", text)


# MkDocs hooks


def on_files(files, config):
    from mkdocs.structure.files import File

    readme = Path(config.config_file_path).parent / "README.md"
    files.append(File.generated(config, "index.md", content=readme_as_home(readme.read_text())))
    files.append(File.generated(config, "cli.md", content=markdown()))
    return files


def on_page_markdown(text, page, config, files):
    """The pages' links to ../README.md (right on GitHub) are links to the home page on the site."""
    return re.sub(r"\]\(\.\./README\.md", "](index.md", text)


if __name__ == "__main__":
    print(markdown(), end="")

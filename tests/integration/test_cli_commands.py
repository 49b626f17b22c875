"""The root's command list: what ``searchapp --help`` lists is what the modules register, and listing it imports
none of them (a lookup does not pay for every command's options and the library behind them)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from searchapp.cli import COMMANDS, _module_commands, app, commands


def test_the_list_is_what_the_modules_register() -> None:
    registered: dict[str, str] = {}
    for module in {c.module for c in COMMANDS.values()}:
        registered.update(dict.fromkeys(_module_commands(module), module))
    assert registered == {name: c.module for name, c in COMMANDS.items()}
    assert set(commands()) == set(COMMANDS)


def test_each_command_is_listed_on_one_line_at_80_columns() -> None:
    result = CliRunner().invoke(app, ["--help"], terminal_width=80, env={"COLUMNS": "80"})
    assert result.exit_code == 0
    for name, command in COMMANDS.items():
        row = next(line for line in result.output.splitlines() if line.startswith(f"│ {name} "))
        assert command.summary in row, (name, row)
    for panel in {c.panel for c in COMMANDS.values()}:
        assert f"─ {panel} ─" in result.output


def test_the_root_help_imports_no_command_module() -> None:
    script = (
        "import sys\n"
        "from searchapp.cli import app\n"
        "try:\n"
        "    app(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('searchapp.cli.') and m.endswith(('_command', "
        "'_commands', '.options')))\n"
        "heavy = sorted(m for m in ('sqlalchemy', 'numpy', 'pydantic', 'searchapp.index') if m in sys.modules)\n"
        "print(loaded, heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[] []"


@pytest.mark.parametrize("name", ["query", "status", "eval-sts"])
def test_a_command_runs_and_shows_its_own_help(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"], terminal_width=80)
    assert result.exit_code == 0
    assert f"searchapp {name} [OPTIONS]" in result.output or f" {name} [OPTIONS]" in result.output
    assert isinstance(commands()[name], typer.core.TyperCommand)

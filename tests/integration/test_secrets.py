"""A database password never reaches a message: not from a URL that does not parse, not from one that cannot
connect, not as a ``password=`` query parameter, in no command (issue: hardening, round 3)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from searchapp.cli import app
from searchapp.errors import ConfigError
from searchapp.store.locate import display

SECRET = "S3cr3t-pw"
runner = CliRunner()
URLS = [
    f"postgresql+psycopg://app:{SECRET}@127.0.0.1:notaport/db",  # does not parse: the whole URL was in the error
    f"postgresql://app:{SECRET}@[::1/db",  # an unclosed IPv6 bracket
    f"postgresql://app:{SECRET}@127.0.0.1:1/db?schema=BAD-NAME",  # parses, refused schema name
    f"postgresql://app:{SECRET}@127.0.0.1:1/db?pool_size=x",
    f"postgresql://app@127.0.0.1:1/db?password={SECRET}&schema=s",
    f"postgresql://app:{SECRET}@127.0.0.1:1/db",  # nothing listens there
    f"postgresql://app:p/a@ss{SECRET}@127.0.0.1:1/db",  # a password with '/' and '@' written raw
]


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("command", [["status"], ["query", "x", "--mode", "lexical"], ["documents"], ["export"],
                                     ["remove", "x"], ["documents", "--json"]])
def test_no_command_prints_the_password(url: str, command: list[str]) -> None:
    pytest.importorskip("psycopg")
    res = runner.invoke(app, [*command, "--index", url])
    assert res.exit_code == 2, res.output
    assert SECRET not in res.output and "Traceback" not in res.output
    assert res.stderr.startswith("error: ") and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("url", URLS)
def test_the_library_error_and_the_display_mask_it(url: str) -> None:
    from searchapp.store.postgres import parse_location

    assert SECRET not in display(url) and "***" in display(url)
    try:
        parse_location(url)
    except ConfigError as exc:
        assert SECRET not in str(exc) and exc.__cause__ is None
    assert display(f"mysql://u:{SECRET}@h/db") == "mysql://u:***@h/db"
    assert display("/srv/index") == "/srv/index"

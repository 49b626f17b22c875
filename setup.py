"""The package list, found rather than written out: every folder under searchapp/ (a folder of data files such as
server/static is a namespace package, so its files ship as package data), plus the Alembic folder migrations/ that
pyproject.toml's package-dir ships as searchapp.migrations (a find cannot see a package whose folder sits outside
searchapp/). Everything else about the build is declared in pyproject.toml."""

from setuptools import find_namespace_packages, setup

MIGRATIONS = ["searchapp.migrations", "searchapp.migrations.versions"]

setup(packages=[*find_namespace_packages(include=["searchapp", "searchapp.*"], exclude=["*.__pycache__"]), *MIGRATIONS])

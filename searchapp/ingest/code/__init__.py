"""Source code and configuration files outlined: where their definitions (classes, functions, blocks, sections,
targets) start and end, as headings, so that each passage knows its enclosing definition as its section.

``definition.py``: what an outliner gives and the line walk they share; ``python.py``: Python by its own parser;
``braces.py``: the brace languages and JSON by brace depth; ``rules.py``: line rules (blank-line blocks at column 0,
TOML and INI sections, YAML keys, Makefile targets, Dockerfile stages); ``outline.py``: the outliners by name and
their definitions made headings.
"""

"""Turning files on disk into documents.

Importing the package registers every loader: loaders.py's own and those of packaged.py (PPTX, ODT/ODP, EPUB),
which builds on loaders.py and so is imported here rather than by it (no import circle).
"""

from searchapp.ingest import packaged as packaged

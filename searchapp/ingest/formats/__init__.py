"""The file formats searchapp reads, one :class:`~searchapp.ingest.formats.format.Format` entry each.

``registry.py`` lists the built-in entries (one explicit list: nothing registers itself on import) and finds a
path's; ``load.py`` reads a file within the size limits and hands its bytes to its format's loader. Each family
has its module (``text.py``: plain text and the markups read by ``ingest/markup``; ``html.py``, ``pdf.py``,
``docx.py``; the zip packages of XML ``pptx.py``, ``opendocument.py``, ``epub.py``), and what they share is here
too: decoding (``decoding.py``), third-party parsers' errors and log lines (``parsers.py``), zip packages checked
and their XML parsed (``zipped.py``), blocks and headings laid out as one text (``blocks.py``).

Parsers (pypdf, python-docx, BeautifulSoup, lxml, charset_normalizer) are imported inside the functions that use
them, so that importing these modules, and thus ``searchapp --help``, stays cheap.
"""

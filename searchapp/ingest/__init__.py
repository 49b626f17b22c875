"""Turning files on disk into documents: the files found (``files.py``), each read by its format
(``formats/``), split (``splitter.py``) and given its sections (``sections.py``), then embedded and committed
(``pipeline.py``; on Ray, ``distributed.py``); folders followed as they change (``watch.py``)."""

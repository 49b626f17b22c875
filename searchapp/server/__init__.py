"""The HTTP API (``searchapp serve``): search, documents, status, and OpenAI-compatible embeddings.

Needs the ``server`` extra (FastAPI, uvicorn); nothing else in the package imports this one.
"""

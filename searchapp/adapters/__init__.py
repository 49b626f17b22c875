"""Retriever adapters for RAG frameworks; each module imports its framework and nothing else does."""

"""Turning files on disk into documents."""

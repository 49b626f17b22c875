"""documents.n_passages and collection_counts: how many passages a document holds, and each named collection's
documents and passages, written with the documents, so that the listings read a row per document (documents) or
per collection (collections) instead of every passage (GET /collections read 100,000 passages per call).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07
"""

from __future__ import annotations

import json
from collections import Counter

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# Frozen history: searchapp/collection.py (KEY, of_metadata: a string value names the collection) as of this
# revision; a migration does not import the package.
_KEY = "collection"
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Both dialects. Each existing document counted once through the passages' document_id index; a document's
    # passages are only ever written and removed with it, so the count holds.
    op.add_column("documents", sa.Column("n_passages", sa.Integer(), nullable=True))
    op.execute("UPDATE documents SET n_passages = "
               "(SELECT count(*) FROM passages WHERE passages.document_id = documents.id)")
    counts = op.create_table(
        "collection_counts",
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("documents", _ID, nullable=False),
        sa.Column("passages", _ID, nullable=False),
    )
    documents: Counter[str] = Counter()
    passages: Counter[str] = Counter()
    rows = op.get_bind().execute(sa.text("SELECT metadata, n_passages FROM documents"))
    for metadata, n in rows:
        name = json.loads(metadata or "{}").get(_KEY)
        if isinstance(name, str):
            documents[name] += 1
            passages[name] += int(n or 0)
    if documents:
        op.bulk_insert(counts, [{"name": k, "documents": documents[k], "passages": passages[k]} for k in documents])


def downgrade() -> None:
    op.drop_table("collection_counts")
    op.drop_column("documents", "n_passages")

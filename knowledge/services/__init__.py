"""Services of the knowledge app: ingestion and releases."""

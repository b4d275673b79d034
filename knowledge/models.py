"""Models of the knowledge app."""

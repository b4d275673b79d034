"""Models of the claims app."""

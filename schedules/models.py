"""Models of the schedules app."""

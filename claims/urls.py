"""REST API v1 routes of the claim agent (mounted under /api/v1/)."""

urlpatterns: list = []

"""Measurement of the claim agent through its REST endpoint (seed 000 P6, 003 §4).

``harness`` runs the inventories and the four end-to-end scenarios through
``POST /api/v1/conversations/{id}/messages/`` and reads each turn's run
record; ``report`` writes the JSON and HTML reports; ``bench`` times turns.
Nothing here calls a search function: every figure comes from run records.
"""

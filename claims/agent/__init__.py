"""The claim agent turn: one customer message in, one checked reply draft out.

Read ``claims.agent.turn.turn_run`` top to bottom to follow a message from
the endpoint to the reply; each step lives in its own module and passes
frozen dataclasses from ``claims.agent.types``.
"""

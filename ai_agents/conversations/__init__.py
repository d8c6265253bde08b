"""The conversation engine: inbound -> engine phases (turn, context, retrieval, model) -> delivery.

See docs/architecture.md for the path of a message through these files."""

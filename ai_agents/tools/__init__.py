"""Tools the agents can call: registry, argument schemas, HTTP tools."""

"""Shared test support: driver factories for the conformance suite and service probes."""

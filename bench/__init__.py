"""Drivers that run experiments: simulation studies, the routing-speed benchmark (later: Spark runs)."""

"""What the upstream controllers do with what the platform declares, as small pure functions and tables.

Each module is named after the controller it models and cites the upstream file and tag of each rule.
This package imports nothing of the project's own (only the standard library), so `config/` checks,
components, the offline CLI, the tests and the simulator all share one copy of each rule.
"""

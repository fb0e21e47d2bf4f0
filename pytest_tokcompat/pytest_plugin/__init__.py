"""The pytest front-end: options and hooks (plugin.py), nodes, the controller-only reporter, fixtures."""

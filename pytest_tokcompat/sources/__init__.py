"""Where checkpoint files come from: bundled snapshots, the hub cache, and the one resolver."""

"""A client package of pytest-tokcompat's self-tests: its own tokenizer loaders, declared by a plugin."""

"""Judging one checkpoint under the installed transformers: the ladder, parity, alarms, the evaluator."""

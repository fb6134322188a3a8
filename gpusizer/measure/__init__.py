"""Measurement closes the loop (the method's third step): observed usage and benchmark runs."""

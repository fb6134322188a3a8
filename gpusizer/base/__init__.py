"""The floor every other layer stands on: errors, units, field types, the registries of names
(providers, rejection codes), the input boundary, redaction, packaged data and cost arithmetic.

Nothing here imports another gpusizer layer.
"""

"""Estimators: memory, speed, and whether a GPU shape runs a workload.

memory.py    bytes per component (weights, KV cache, activations, states, overhead)
speed.py     roofline speed: decode, prefill, training time
workload.py  a spec resolved against its model (shape-independent requirements)
fit.py       a GPU shape judged against the workload: the first failed limit
"""

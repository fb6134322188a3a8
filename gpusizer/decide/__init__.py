"""The decision: judge every offer of the catalog against a workload and choose the cheapest adequate one.

candidate (the value types) <- runs <- judgement <- optimize -> decision; misses reads judged offers.
"""

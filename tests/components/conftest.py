"""Pulumi mocks for component tests: the same recorder the offline preview uses.

Follows ../shared/docs/pulumi-offline.md: preview=False (outputs known, checks
over them run), ids returned for every resource, unmocked invokes raise, a
fresh root stack and event loop per program run.
"""

from __future__ import annotations

import asyncio

from policies.offline import MockCloud, run_program

__all__ = ["MockCloud", "resolve", "run_program"]


def resolve(output) -> object:
    """The value of an Output created under mocks (preview=False, so it is known)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(output.future())
    finally:
        loop.close()

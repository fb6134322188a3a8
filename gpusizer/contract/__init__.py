"""What other programs read from the engine: the sizing metadata keys components write and the pack
reads (metadata), the audit of provisioned capacity (audit), and the versioned output documents
(output: pydantic models of the plan, estimate, preview and diff JSON).
"""

OUTPUT_VERSION = "1"
"""The output contract's version, the `version` of every plan, estimate, preview and diff document.

Adding a field keeps it (readers ignore fields they do not know); changing a field's meaning or
removing one bumps it. docs/contract.md section 2 lists what each version holds. Documents written
before versioning (no `version`) are version "0": the same fields as "1".
"""

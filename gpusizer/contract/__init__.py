"""What components/ and policies/ read from the engine: sizing metadata keys and the audit of
provisioned capacity against its requirement."""

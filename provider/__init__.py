"""The gpusizer component provider (docs/pulumi.md, "Other languages"): GpuWorkload as a Pulumi package.

provider/__main__.py is the plugin's entry point; host.py serves the schema
(schema.py, derived from the models), Construct and the plan function; outputs.py
is the table of what both return.
"""

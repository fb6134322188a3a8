"""The errors the engine raises on purpose.

Every one derives from :class:`SizingError`, itself a ``ValueError``, so a
caller can catch one class; anything else escaping the public API is a bug.
"""


class SizingError(ValueError):
    """Base class of every error gpusizer raises on purpose."""


class SpecError(SizingError):
    """A workload spec (or a pool declaration) is invalid.

    Raised before anything is estimated or provisioned. The message names the
    field, says what is wrong and how to fix it; the CLI prints it and exits 2.

    Attributes:
        field: dotted path of the offending field ("inference.batch_size"),
            or "" when the whole document is at fault.
    """

    def __init__(self, message: str, field: str = ""):
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> tuple[type["SpecError"], tuple[str, str]]:
        """Pickled with its field (an exception pickles its args alone): a forked preview phase sends it back."""
        return type(self), (str(self), self.field)


class UnknownModelError(SpecError):
    """``model.name`` matches no registry entry; the message lists the nearest names."""


class CatalogError(SizingError):
    """A catalog file is missing, corrupt or inconsistent.

    The caller falls back to the embedded snapshot where it can (a corrupt
    cache is reported and ignored, never half-used).
    """


class MissingExtraError(SizingError):
    """A command needs an optional extra that is not installed (``gpusizer preview`` needs [pulumi]).

    The message names the extra and the pip command that installs it; the CLI
    prints it and exits 2, as for any other input the user can fix.
    """

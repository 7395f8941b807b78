"""The one kind of failure knee reports to its user."""


class KneeError(Exception):
    """A failure with a message meant for the user: it names the file, field and value."""

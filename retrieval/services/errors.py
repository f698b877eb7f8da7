"""The error every retrieval write raises when it refuses a request."""


class RetrievalError(ValueError):
    """A request was refused; nothing was written. The message says what to fix."""

"""The error a bad spec value raises (no JAX: the ``mobandit`` command reads its spec before JAX loads)."""


class ConfigError(ValueError):
    """A malformed spec: the message names the offending key or value and what is allowed.

    The message is one line: line breaks inside quoted keys or values are shown escaped (``\\n``).
    """

    def __init__(self, message: str):
        super().__init__(str(message).replace("\r", "\\r").replace("\n", "\\n"))

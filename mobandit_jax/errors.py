"""The error a bad spec value raises (no JAX: the ``mobandit`` command reads its spec before JAX loads)."""


class ConfigError(ValueError):
    """A malformed spec: the message names the offending key or value and what is allowed.

    The message is one line: line breaks inside quoted keys or values are shown escaped (``\\n``).
    """

    def __init__(self, message: str):
        super().__init__(str(message).replace("\r", "\\r").replace("\n", "\\n"))


def did_you_mean(word: str, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to a misspelt ``word``
    (:func:`difflib.get_close_matches`), else ``""``: a suffix for a one-line error.

    Args:
      word: what the user wrote.
      choices: the names allowed there.

    Returns:
      The suffix, or the empty string where nothing is close.
    """
    import difflib

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def plain(value):
    """``value`` with its numpy (or JAX) scalars and arrays made Python numbers and lists, inside lists, tuples and
    dicts too: what a message formats, so that it shows ``1.5``, never ``np.float64(1.5)``.

    Args:
      value: any value.

    Returns:
      The value, its array scalars and arrays replaced by ``.tolist()``.
    """
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value.tolist() if hasattr(value, "dtype") and hasattr(value, "tolist") else value


def one_line_warning(message, category, filename, lineno, file=None, line=None):
    """A :func:`warnings.showwarning` that shows a warning as ``warning: MESSAGE`` on one line of stderr (no file,
    line or source): what the ``mobandit`` command and its job processes show.

    Args:
      message: the warning.
      category: its class (not shown).
      filename: where it was raised (not shown).
      lineno: its line (not shown).
      file: where to write it (default: stderr).
      line: its source line (not shown).
    """
    import sys

    print("warning: " + " ".join(str(message).split()), file=sys.stderr if file is None else file)

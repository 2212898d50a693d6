"""MkDocs hook: show the docstrings' Sphinx roles (:class:`Policy`, :func:`~a.b.run`) as plain code."""
import re

ROLE = re.compile(r":(?:py:)?(?:class|func|mod|meth|attr|data|obj|exc):<code>~?([^<]*)</code>")


def _name(match: re.Match) -> str:
    text = match.group(1)
    short = match.group(0).split("<code>", 1)[1].startswith("~")
    return f"<code>{text.rsplit('.', 1)[-1] if short else text}</code>"


def on_page_content(html, **kwargs):
    """Replace each role and its code span by the code span alone (``~``: the last dotted part)."""
    return ROLE.sub(_name, html)

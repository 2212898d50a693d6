"""What a report builder's ``report.md`` says besides its figures, shared by the report tests of ``figures=False``."""
import re

IMAGE = re.compile(r"^!\[[^\]]*\]\([^)]*\)$")


def image_lines(text: str) -> list:
    """The markdown image lines of ``text``."""
    return [line for line in text.splitlines() if IMAGE.match(line)]


def without_images(text: str) -> str:
    """``text`` without its image lines, runs of blank lines made one."""
    lines = [line for line in text.splitlines() if not IMAGE.match(line)]
    return "\n".join(line for i, line in enumerate(lines) if line or i == 0 or lines[i - 1])

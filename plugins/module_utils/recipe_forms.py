# -*- coding: utf-8 -*-
# Copyright: contributors to dgxspark.ds41f
# Apache License 2.0 (see LICENSE)
"""Two value forms an option's description can declare (plugins/module_utils/recipe.py reads them).

- ``Size: Docker.`` / ``Size: systemd.``: a size with its unit. A bare number is refused: Docker and systemd
  would read it as bytes (a 112-byte memory limit kills the engine at once), so bytes are written explicitly.
- ``Name.``: a name that reaches URLs, paths or labels (served model names, release names, the container name):
  one character set, whole value. On a list it applies to each element, on a mapping to each key.
"""

from __future__ import annotations

import re

# {form: (pattern, units, example)}: Docker's (docker run --memory/--shm-size) and systemd's (MemoryMin=) sizes.
SIZES = {
    "Docker": (r"[1-9][0-9]*[bkmgBKMG]", "b (bytes), k, m or g", "16g"),
    "systemd": (r"[1-9][0-9]*[BKMGT]", "B (bytes), K, M, G or T", "128M"),
}
# Letters and digits first, then letters, digits, dot, underscore or dash: never ".", "..", a slash or a space.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
NAME_TEXT = ("1 to 128 letters, digits, dots, underscores and dashes, starting with a letter or digit (no "
             "spaces or slashes, never . or ..)")


def size_problem(value, form):
    """(message, fix) when ``value`` is not a size of ``form`` with its unit, else None."""
    pattern, units, example = SIZES[form]
    if isinstance(value, str) and re.fullmatch(pattern, value):
        return None
    if isinstance(value, int) and not isinstance(value, bool) or isinstance(value, str) and value.isdigit():
        number, unit = str(value), example[-1]
        return ("%r is a bare number, which %s reads as bytes." % (value, form),
                "write it as a string with its unit, e.g. %s%s (units: %s); %s%s if bytes are meant." % (
                    number, unit, units, number, units[0]))
    return ("%r is not a positive %s size with its unit." % (value, form),
            "write a whole number and its unit, such as %s (units: %s)." % (example, units))


def name_problem(value):
    """(message, fix) when ``value`` is not a name of the documented character set, else None."""
    if isinstance(value, str) and NAME.fullmatch(value):
        return None
    return ("%r is not a name clients and paths can carry." % (value,), "use %s." % NAME_TEXT)

"""`ds41f render [NODE]`: the `docker run` line each rank runs, from the launch spec the serve stage renders
(playbooks/day2/render.yml); it never connects to a node, so it works on any site."""

from __future__ import annotations

import shlex

from ds41f.day2 import common


def groups(words, first=()):
    """Each flag with the values that follow it (a word not starting with '-' belongs to the flag before)."""
    out = [list(first)] if first else []
    for word in words:
        if word.startswith("-") or not out:
            out.append([word])
        else:
            out[-1].append(word)
    return out


def wrapped(command, image):
    """The one-line command as lines a shell reads back the same: ``docker run``, each flag with its value, the
    image, then the engine's command flag by flag."""
    words = shlex.split(command)
    at = words.index(image) if image in words else len(words)
    lines = groups(words[2:at], words[:2]) + ([[image]] if at < len(words) else []) + groups(words[at + 1:])
    return " \\\n    ".join(shlex.join(line) for line in lines)


def main(inventory, env, node=None, one_line=False, passthrough=()):
    result = common.run("render", inventory, env, limit=node, passthrough=passthrough)
    readings = common.by_rank(result.task_results("Render the launch"))
    if not readings or result.failures():
        common.report_failures(result, "render")
        return 2 if result.failures() else (result.rc or 2)
    for name, reading in readings:
        print("# %s: rank %s, release %s" % (name, reading.get("rank"), reading.get("release")))
        print(reading["command"] if one_line else wrapped(reading["command"], reading.get("image")))
    return 0

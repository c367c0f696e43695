"""`ds41f render [NODE]`: the `docker run` line each rank runs, from the launch spec the serve stage renders
(playbooks/day2/render.yml); it never connects to a node, so it works on any site. `--compare` sets each rank's
launch beside the recorded production launch of its shape instead (ds41f/release.py)."""

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


def compare(readings):
    """Each rank's launch beside the recorded production launch of its shape (ds41f/release.py): the differences,
    the reviewed list's reason for each; 1 when one is not reviewed or the list names one that is gone."""
    from ds41f import release

    # The docker run line itself (the image as it names it, by tag or ID, and the head's key file), with the spec
    # for what the line cannot say (the image's own entrypoint) and the env files' contents.
    result = release.compare([{"spec": reading["spec"], "words": shlex.split(reading["command"]),
                               "env_files": reading.get("env_files") or {}} for _, reading in readings])
    lines, ok = release.report(result, {int(reading["rank"]): name for name, reading in readings})
    print("\n".join(lines))
    print("ds41f render --compare: %s (reviewed list: %s)" % (
        "every difference is reviewed" if ok else "differences not reviewed or a stale entry, see above",
        release.REVIEWED.relative_to(release.paths.ROOT)))
    return 0 if ok else 1


def main(inventory, env, node=None, one_line=False, passthrough=(), compare_recorded=False):
    extra = {"ds41f_render_compare": True} if compare_recorded else None
    result = common.run("render", inventory, env, limit=node, extra=extra, passthrough=passthrough)
    readings = common.by_rank(result.task_results("Render the launch"))
    if not readings or result.failures():
        common.report_failures(result, "render")
        return 2 if result.failures() else (result.rc or 2)
    if compare_recorded:
        return compare(readings)
    for name, reading in readings:
        print("# %s: rank %s, release %s" % (name, reading.get("rank"), reading.get("release")))
        print(reading["command"] if one_line else wrapped(reading["command"], reading.get("image")))
    return 0

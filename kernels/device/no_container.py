#!/usr/bin/env python
"""Stands in for `docker` where node_qualify runs on a machine with a GPU but no container engine (the device
machine of this workplace, which has torch and TileLang but neither docker nor the serving image).

It takes the `docker run` argv that plugins/module_utils/qualify.command builds and runs the entrypoint with
the arguments after the image directly on this host, with the `--env` values set; `--gpus`, `--network` and
`--volume` have no meaning without a container and are dropped. Not for a real node.
"""

import os
import sys

FLAGS_WITH_VALUE = {"--gpus", "--network", "--volume", "--entrypoint", "--env"}


def main(argv):
    if not argv or argv[0] != "run":
        sys.exit("no_container.py: only `run` is supported, got %r" % argv[:1])
    args, env, entrypoint, i = argv[1:], dict(os.environ), None, 0
    while i < len(args) and args[i].startswith("--"):
        flag = args[i]
        if flag == "--rm":
            i += 1
            continue
        if flag not in FLAGS_WITH_VALUE or i + 1 >= len(args):
            sys.exit("no_container.py: unexpected docker run flag %r" % flag)
        value = args[i + 1]
        if flag == "--entrypoint":
            entrypoint = value
        elif flag == "--env":
            key, _, val = value.partition("=")
            env[key] = val
        i += 2
    if entrypoint is None or i >= len(args):
        sys.exit("no_container.py: expected --entrypoint and an image")
    image, rest = args[i], args[i + 1:]
    print("no_container.py: running %s %s on this host, not in image %s" % (entrypoint, " ".join(rest), image),
          file=sys.stderr)
    sys.stderr.flush()
    os.execvpe(entrypoint, [entrypoint] + rest, env)


if __name__ == "__main__":
    main(sys.argv[1:])

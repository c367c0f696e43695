#!/bin/sh
# The lab image's smoke command: proves the patched source made it into the image.
echo "hello from $(cat /opt/hello/VERSION)"
cat /opt/hello/BUILT

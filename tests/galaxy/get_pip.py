"""Stand-in for the get-pip.py that ansible-test downloads to bootstrap pip in its sanity virtualenvs.

ansible-test fetches get-pip from ci-files.testing.ansible.com, which CI cannot reach; this one installs the pip
that ships with Python (ensurepip, no download), then upgrades it to the pin ansible-test asks for from the
configured package index.
ansible-test runs it as `python get_pip.py [get-pip options] pip==X ...`."""

import ensurepip
import os
import subprocess
import sys

GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

env = dict(os.environ)
ensurepip.bootstrap(upgrade=True)  # it points PIP_CONFIG_FILE at /dev/null for itself: the pip below needs the config
args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args], env=env))

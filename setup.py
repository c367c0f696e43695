"""pip install -e .  gives the controller its Python packages (ansible-core included) and the `ds41f` command.
pip cannot install Ansible collections: the one the roles call (community.docker) comes with
`ansible-galaxy collection install -r requirements.yml` (or with `pip install ansible`, which ships it).
pip install -e .[node]  adds torch and TileLang for the node qualification kernels (kernels/)."""

from setuptools import find_packages, setup

setup(
    name="ds41f",
    version="0.1.0",
    description="DeepSeek V4.1 Flash on DGX Spark clusters: the dgxspark.ds41f collection's controller tools",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=find_packages(include=["ds41f", "ds41f.*"]) + find_packages("kernels", include=["ds41f_kernels*"]),
    package_dir={"ds41f_kernels": "kernels/ds41f_kernels"},
    package_data={"ds41f.lab": ["*.txt", "*.conf"], "ds41f.bench": ["references/*.yml", "tasks/*.json"],
                  "ds41f_kernels": ["*.json", "*.yml"]},
    install_requires=[
        "ansible-core>=2.19.14,<2.22",  # as meta/runtime.yml requires_ansible: the releases CI runs (make matrix)
        "ansible-runner>=2.4",
        "netaddr>=1.0",
        "PyYAML>=6.0",
    ],
    extras_require={
        "node": ["torch", "tilelang==0.1.15"],
        "bench": ["jsonschema>=4.18"],  # the bench's compliance suite (ds41f/bench/compliance.py)
    },
    entry_points={"console_scripts": ["ds41f=ds41f.cli:main"]},
)

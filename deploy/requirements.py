"""Print the requirements of Ballast's pyproject.toml, one a line, for the image's dependency layers (deploy/Dockerfile):
the core dependencies, or with an extra's name, that extra's. Installed from these, a dependency layer does not change
when only Ballast's source does."""

import sys
import tomllib

project = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(project["optional-dependencies"][sys.argv[2]] if len(sys.argv) > 2 else project["dependencies"]))

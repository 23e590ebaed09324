"""The test suite.

Python caches compiled modules, and pytest the test modules it rewrites, in __pycache__ (ignored by git),
even where the environment turns that off (PYTHONDONTWRITEBYTECODE), as `make test` does: compiling the
project and rewriting every test module again in each session costs about 3 s of CPU. This package is
imported before tests/conftest.py and everything it imports.
"""

import sys

sys.dont_write_bytecode = False

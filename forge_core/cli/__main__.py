"""`python -m forge_core.cli`."""

from forge_core.cli import main

main()

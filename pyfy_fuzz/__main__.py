"""Entry point for ``python -m pyfy_fuzz``."""

from pyfy_fuzz.cli import main

if __name__ == "__main__":
    raise SystemExit(main())

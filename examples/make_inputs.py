"""Write examples/mutate_view_inputs.pt: the positional arguments for examples/mutate_view.py:f.

Usage: ``python examples/make_inputs.py [PATH]`` (seeded, so the file comes out the same).
"""

import sys
from pathlib import Path

import torch

DEFAULT_PATH = Path(__file__).with_name("mutate_view_inputs.pt")


def main(path: Path = DEFAULT_PATH) -> None:
    torch.manual_seed(0)
    torch.save((torch.randn(4, 3), torch.randn(4, 3)), path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_PATH)

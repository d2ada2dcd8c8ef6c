"""One case: a program through its subjects, observed, judged by the oracles."""

__all__: list[str] = []

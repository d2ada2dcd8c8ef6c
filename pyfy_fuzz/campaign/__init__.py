"""Many cases: the campaign, its workers, shrinking, budgets, replay and migrate."""

__all__: list[str] = []

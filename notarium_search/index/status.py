"""Kept for the front doors' imports while they move to `notarium_search.types`."""

from notarium_search.types import BUILDING_MESSAGE

__all__ = ["BUILDING_MESSAGE"]

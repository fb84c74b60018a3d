"""Retention before retrieval: which memory blocks survive eviction, and why."""

__version__ = "0.1.0"

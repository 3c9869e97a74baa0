"""Ballast stream processors and what they share."""

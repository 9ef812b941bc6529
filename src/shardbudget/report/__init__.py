"""Presentation: terminal tables, matplotlib figures and the single-file HTML report."""

"""Reproduction reports, one module per paper: run directories in, report.md and figures out."""

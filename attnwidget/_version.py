"""The package version, in one place (the top package and result files read it)."""

__version__ = "0.1.0"

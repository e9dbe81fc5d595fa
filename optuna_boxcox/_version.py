"""The package's version, importable without importing the package's dependencies."""

__version__ = "0.1.0"

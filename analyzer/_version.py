"""The version of cancelwire: one owner, read by the package face, the reports and the build."""

__version__ = "0.1.0"

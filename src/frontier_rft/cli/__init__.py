"""The `frontier` command line."""

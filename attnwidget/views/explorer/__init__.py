"""The Explorer and ImageExplorer: the front door that links every view."""

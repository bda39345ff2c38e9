"""The Annotator (human rationales in a SQLite store) and AlignmentView."""

"""GenerationView: generated tokens, each explained over its prefix."""

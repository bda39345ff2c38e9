"""AttentionCalculator: attention computed step by step, for teaching."""

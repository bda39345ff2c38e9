"""EvaluationView: faithfulness and plausibility over a data set."""

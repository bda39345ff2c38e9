"""SaliencyView: tokens coloured by each method's relevance."""

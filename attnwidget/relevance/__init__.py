"""The code that re-runs a model: relevance engines and their rule tables.

Between :mod:`attnwidget.capture` (one forward+backward pass → an attention
record) and :mod:`attnwidget.methods` (pure functions on arrays): what needs
the model again after the capture lives here, so the methods stay array maths.

* :mod:`.rerun`: re-run one captured example (its target logit as a function
  of the input embeddings, its probability as a function of the ids, and one
  more forward+backward inside a caller's context manager).
* :mod:`.lrp`: AttnLRP's rules installed on a stock model for one pass.
* :mod:`.chefer`: Chefer, Gur & Wolf's (CVPR 2021) LRP rules, the relevance
  behind ``chefer2021``.
"""

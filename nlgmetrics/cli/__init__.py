"""Entry-point layer: ``evaluate`` (scoring, correlation, stress) and ``train`` (NLI, synthesis, SEScore fit).

The only part of ``nlgmetrics`` that imports the metric packages; it composes them by name. Installed as the
console commands ``nlgmetrics-evaluate`` and ``nlgmetrics-train``; ``evaluate.py``/``train.py`` call the same
``main`` functions from a source checkout.
"""

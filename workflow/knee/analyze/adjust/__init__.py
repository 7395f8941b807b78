"""Figures adjusted for the host's speed: the covariate and its balance (covariate), the
slopes fitted on A/A folders (calibration), and the protocol planned from them (design)."""

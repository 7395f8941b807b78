"""Analysis: Prometheus series, statistics over boot pairs, the comparison, the bar's
verdicts, the k model behind a recommendation, and reading a results folder. Imports the
plan and below; never boots, sends or samples anything."""

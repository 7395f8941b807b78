"""The plan: a config file read strictly, validated and resolved into arms, places, secrets
and the stopping rule. Imports the core and the instruments' declarations."""

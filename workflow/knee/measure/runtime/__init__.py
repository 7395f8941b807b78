"""Boot and stop an engine, talk to its endpoint. Only the session imports this package."""

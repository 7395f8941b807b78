"""Validate a crate with roc-validator (rocrate-validator) against the Workflow Run Crate 0.5
profile on a machine without internet access.

The validator fetches the crate's JSON-LD context from w3id.org. Here it is served from disk:
RO-Crate 1.1's context is ro-crate-py's bundled 1.3 context with the four IRI mappings that 1.3
changed put back (ComputationalWorkflow, FormalParameter, input, output: the 1.3 changelog
lists no other change of mapping). Everything else is the validator's own code and profiles.
"""

from __future__ import annotations

import json
from pathlib import Path

import requests
import rocrate
from rdflib.plugins.shared.jsonld import context as jsonld_context
from rdflib.plugins.shared.jsonld import util as jsonld_util

CONTEXT_11 = "https://w3id.org/ro/crate/1.1/context"
PROFILE = "workflow-run-crate-0.5"
RESTORED_11 = {"ComputationalWorkflow": "https://bioschemas.org/ComputationalWorkflow",
               "FormalParameter": "https://bioschemas.org/FormalParameter",
               "input": "https://bioschemas.org/properties/input",
               "output": "https://bioschemas.org/properties/output"}


def context_11() -> dict:
    doc = json.loads((Path(rocrate.__file__).parent / "data" / "ro-crate.jsonld").read_text())
    doc["@context"].update(RESTORED_11)
    return doc


def serve_locally() -> None:
    """Route the validator's two ways of fetching a context to the local copy."""
    from rocrate_validator.utils.http import HttpRequester

    local = {CONTEXT_11: context_11()}
    original = jsonld_util.source_to_json

    def source_to_json(source, fragment_id=None, extract_all_scripts=False):
        if isinstance(source, str) and source in local:
            return local[source], None
        return original(source, fragment_id, extract_all_scripts)

    jsonld_util.source_to_json = jsonld_context.source_to_json = source_to_json
    def requester_get(self, url, *args, **kwargs):
        if url not in local:  # the requester's own GET (it delegates by __getattr__)
            return self.__getattr__("get")(url, *args, **kwargs)
        response = requests.Response()
        response.status_code, response.url = 200, url
        response._content = json.dumps(local[url]).encode()
        response.headers["Content-Type"] = "application/ld+json"
        return response

    HttpRequester.get = requester_get


def issues(root: Path, severity: str = "REQUIRED") -> list[str]:
    """Every issue the validator finds at this severity or above; empty when it passes."""
    serve_locally()
    from rocrate_validator import services

    result = services.validate({"rocrate_uri": str(root), "profile_identifier": PROFILE,
                                "requirement_severity": severity,
                                "skip_availability_check": True})
    found = [f"{i.severity.name} {i.check.identifier}: {i.message}" for i in result.get_issues()]
    assert found or result.passed()
    return found

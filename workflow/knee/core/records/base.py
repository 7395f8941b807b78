"""What every record shares: a mapping no module reads as a whole, a config, a point, and the
stamp every file knee writes starts with."""

from typing import Any, TypedDict

Section = dict[str, Any]
# a config as knee.plan.config.validate returns it: config.schema.yaml's keys, defaults filled
Config = dict[str, Any]
# a point of an instrument: a sweep's concurrency, a probe's temperature, or "all"
Point = int | float | str


class Stamped(TypedDict, total=False):
    """What every file knee writes starts with: jsonio.write stamps a record with them."""

    schema: str
    schema_version: int

# The config, read by knee itself (knee.plan.configfile: plain YAML, no templates, duplicate keys
# refused): `snakemake --configfile FILE [FILE ...]` or `--config experiment=FILE`, with
# `--config name=NAME` over either; the default file otherwise; or `--config
# experiments=[A,B]`. Under --configfile, knee reads the files Snakemake was given again with
# its own loader and uses only that reading.
import os

from knee.plan import configfile as knee_configfile
from knee.core.errors import KneeError

DEFAULT_CONFIG = "config/config.yaml"


def shown_path(path):
    """A path as plans and READMEs show it: relative to the working directory when inside."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel


# one of several experiments run together: a module of workflow/rules/experiments.smk, which
# names its modules "knee-experiment-*" (Snakemake's namespace, which no config can set) and
# hands each the config knee read; anywhere else a `knee_source` key is the user's, and knee's
# reader refuses it like any unknown key
IN_MODULE = (getattr(workflow.modifier, "namespace", None) or "").startswith("knee-experiment-")
if IN_MODULE:
    CONFIG_SOURCE = config.pop("knee_source")
    CONFIG_FILES = [CONFIG_SOURCE]
else:
    try:
        _loaded, CONFIG_SOURCE, CONFIG_FILES = knee_configfile.take(
            dict(workflow.config_settings.config),
            [shown_path(f) for f in workflow.overwrite_configfiles],
            DEFAULT_CONFIG,
        )
    except KneeError as e:
        raise WorkflowError(str(e)) from None
    config.clear()
    config.update(_loaded)

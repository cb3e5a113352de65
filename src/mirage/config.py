"""Loading and validating the workflow configuration against ``config/schema.yaml``."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from mirage.errors import ConfigError

SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"


def load_schema(path: str | Path = SCHEMA) -> dict:
    return yaml.safe_load(Path(path).read_text())


def validate(config: dict, schema: dict | None = None, *, source: str = "config") -> dict:
    """Raise ConfigError naming the first bad key (as a dotted path) and what it must be."""
    schema = schema or load_schema()
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(e.path), list(map(str, e.path))))
    if errors:
        err = errors[0]
        path = [str(p) for p in err.absolute_path]
        if err.validator == "required" and isinstance(err.instance, dict):
            # name the missing key itself, not its parent
            path.append(next(k for k in err.validator_value if k not in err.instance))
        key = ".".join(path) or "(top level)"
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: key `{key}`: {err.message}{more}. See config/schema.yaml")
    _check_windows(config, source)
    return config


def _check_windows(config: dict, source: str) -> None:
    # Order of dates is beyond JSON Schema; check it here so the error still names the key.
    for name, cluster in config.get("clusters", {}).items():
        for split, window in cluster.get("windows", {}).items():
            if str(window["end"]) < str(window["start"]):
                raise ConfigError(
                    f"{source}: key `clusters.{name}.windows.{split}`: end {window['end']} is "
                    f"before start {window['start']}"
                )
        if cluster.get("source") == "file" and "path" not in cluster:
            raise ConfigError(f"{source}: key `clusters.{name}.path` is required when source is `file`")


def load(path: str | Path) -> dict:
    p = Path(path)
    try:
        config = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {p} not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p} is not valid YAML: {exc}") from None
    return validate(config or {}, source=str(p))

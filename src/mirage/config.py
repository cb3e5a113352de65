"""Loading and validating the workflow configuration against ``config/schema.yaml``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from mirage.errors import ConfigError, MirageError
from mirage.policies.catalogue import CATALOGUE

SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"
DEFAULTS = SCHEMA.with_name("defaults.yaml")


def load_schema(path: str | Path = SCHEMA) -> dict:
    """The schema at ``path``, its ``policies.names`` limited to the policy catalogue's names
    (mirage.policies.catalogue), so a policy is declared in one place."""
    schema = yaml.safe_load(Path(path).read_text())
    names = schema.get("properties", {}).get("policies", {}).get("properties", {}).get("names")
    if names is not None:
        names["items"] = {**names.get("items", {}), "enum": list(CATALOGUE.names())}
    return schema


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
        if path[:2] == ["policies", "names"] and err.validator == "enum":
            raise ConfigError(f"{source}: key `{key}`: {_unknown_policy(err.instance)}")
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: key `{key}`: {err.message}{more}. See config/schema.yaml")
    _check_windows(config, source)
    return config


def _unknown_policy(name) -> str:
    return (f"unknown policy {name!r}; known: {', '.join(CATALOGUE.names())}. Fix: use one of "
            "them, or add the policy to the catalogue (CONTRIBUTING.md, Adding a policy)")


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
        if cluster.get("description") == "generator" and cluster.get("source") != "synthetic":
            raise ConfigError(f"{source}: key `clusters.{name}.description`: `generator` (the "
                              "synthetic trace's own scheduler) needs `source: synthetic`. Fix: "
                              "use auto, file or fitted")


def _read(p: Path) -> dict:
    try:
        config = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {p} not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p} is not valid YAML: {exc}") from None
    if config is not None and not isinstance(config, dict):
        raise ConfigError(f"{p}: a config is a mapping of keys, not {type(config).__name__}")
    return config or {}


def merge(base: dict, over: dict) -> dict:
    """``over`` merged into a copy of ``base`` as Snakemake merges config files: nested mappings
    merge key by key, anything else (lists included) is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def layered(path: str | Path, defaults: str | Path | None = DEFAULTS) -> dict:
    """A config file over the shared defaults (config/defaults.yaml), not yet validated."""
    config = _read(Path(path))
    return merge(_read(Path(defaults)), config) if defaults else config


def overlay_base(path: str | Path) -> Path | None:
    """The config an overlay is merged over: the ``config/<run>.yaml`` beside it that its
    ``run`` names, when that is another file (``config/ls6-rolling.yaml`` adds folds to
    ``ls6-real.yaml``'s run: ``--configfile config/ls6-real.yaml config/ls6-rolling.yaml``);
    None for a config that stands alone."""
    path = Path(path).resolve()
    run = (_read(path) or {}).get("run")
    base = path.parent / f"{run}.yaml" if run else None
    return base if base is not None and base.is_file() and base != path else None


def shipped_files(path: str | Path) -> list[Path]:
    """The files Snakemake merges, in order, for the config at ``path``: an overlay's base
    (``overlay_base``) first, then the file itself."""
    base = overlay_base(path)
    return [base, Path(path)] if base is not None else [Path(path)]


def shipped_raw(path: str | Path, defaults: str | Path | None = None) -> dict:
    """``shipped_files(path)`` merged in order as Snakemake merges them (over ``defaults``
    when given), not yet validated."""
    config = _read(Path(defaults)) if defaults else {}
    for f in shipped_files(path):
        config = merge(config, _read(f))
    return config


def load_shipped(path: str | Path, defaults: str | Path | None = DEFAULTS) -> dict:
    """A config as Snakemake merges it: over the defaults and, for an overlay
    (``overlay_base``), over its base config too; validated."""
    return validate(shipped_raw(path, defaults),
                    source=" + ".join(str(f) for f in shipped_files(path)))


def run_name(config: dict, path: str | Path | None = None) -> str:
    """Where a run writes (results/<run>/): the config's ``run``, else its file's name."""
    return str(config.get("run") or (Path(path).stem if path else "default"))


def load(path: str | Path, defaults: str | Path | None = DEFAULTS) -> dict:
    """A config file over the shared defaults, validated."""
    return validate(layered(path, defaults), source=str(path))


# ---------------------------------------------------------------------- ``mirage config ...``
def _write_cmd(args) -> None:
    config = json.loads(args.json)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    header = "".join(f"# from {f}\n" for f in args.source)
    Path(args.out).write_text("# The configuration this run used (defaults merged).\n" + header
                              + yaml.safe_dump(config, sort_keys=False))
    print(f"configuration -> {args.out}")


def _validate_cmd(args) -> None:
    beside = Path(args.config).with_name("schema.yaml")
    schema = Path(args.schema) if args.schema else (beside if beside.exists() else SCHEMA)
    if not schema.is_file():
        raise MirageError(f"no schema {schema}. Fix: pass --schema config/schema.yaml of the "
                          "checkout, or leave --schema out")
    defaults = None if args.no_defaults else (Path(args.defaults) if args.defaults else DEFAULTS)
    try:  # an overlay (config/ls6-rolling.yaml) as Snakemake merges it: over its base
        config, files = shipped_raw(args.config, defaults), shipped_files(args.config)
    except (OSError, yaml.YAMLError) as exc:
        raise MirageError(f"cannot read config {args.config}: {exc}") from None
    source = " + ".join(str(f) for f in files)
    validate(config, load_schema(schema), source=source)
    print(f"{source}: valid" + (f" (over {defaults})" if defaults else ""))


def register(sub) -> None:
    cfg = sub.add_parser("config", help="check a workflow config")
    csub = cfg.add_subparsers(dest="config_command", required=True)
    p = csub.add_parser("validate", help="validate a config against its schema")
    p.add_argument("config")
    p.add_argument("--schema", help="default: schema.yaml beside the config, else the "
                   "checkout's config/schema.yaml")
    p.add_argument("--defaults", help="the defaults the config layers on (default: "
                   "config/defaults.yaml of this checkout)")
    p.add_argument("--no-defaults", action="store_true", help="validate the file on its own")
    p.set_defaults(func=_validate_cmd)
    p = csub.add_parser("write", help="write a run's merged configuration (JSON) as YAML")
    p.add_argument("--json", required=True)
    p.add_argument("--source", nargs="*", default=[], help="the config files it came from")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_write_cmd)

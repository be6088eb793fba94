"""Reading config files strictly and merging them: Snakemake reads --configfile itself (JSON, else YAML
through YTE), and its YAML keeps the last of two equal keys silently. The workflow reads each file again
with this loader (common.smk, before validation), so a repeated key, a YTE template or an alias bomb is an
error naming the file and line."""
from __future__ import annotations

import copy
from pathlib import Path

import yaml

from .names import ConfigError

# A config of the shipped kind has ~2,000 nodes; a YAML alias bomb (each level naming the one below
# many times) has billions once expanded, which a validator walking the tree would visit one by one.
MAX_CONFIG_NODES = 200_000

class _StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key repeated in one mapping (YAML's last-wins would hide a typo)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: merging is what it is for
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key (a list): the schema reports it
                continue
            if first != key_node.start_mark.line + 1:
                raise ConfigError(f"{self.name}: line {key_node.start_mark.line + 1}: key {key!r} appears twice in "
                                  f"one mapping (first at line {first}); YAML would silently keep the last")
        return super().construct_mapping(node, deep)


def read_config_file(path: str | Path) -> dict:
    """One config file, read strictly: no repeated key, no YTE template (`__use_yte__`), at most
    MAX_CONFIG_NODES values with aliases expanded; errors name the file (and line)."""
    text = Path(path).read_text(encoding="utf-8")
    loader = _StrictLoader(text)
    loader.name = str(path)
    try:
        node = loader.get_single_node()
        if node is None:
            return {}
        n = _expanded_nodes_yaml(node, {})
        if n > MAX_CONFIG_NODES:
            raise ConfigError(f"{path}: expands to {n:,} values (at most {MAX_CONFIG_NODES:,}): YAML aliases "
                              "(*name) repeat a large block many times")
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file is a mapping of keys at the top level")
    if "__use_yte__" in data:
        # Snakemake has already run the template (and any Python in it) by now; this stops the run
        raise ConfigError(f"{path}: `__use_yte__` turns on YTE templating, which runs Python from the config "
                          "file; this workflow's configs are data only (write the values out)")
    return data


def _expanded_nodes_yaml(node, memo: dict) -> int:
    """_expanded_nodes on a composed YAML node graph (an alias is the same node object)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1
    if isinstance(node, yaml.MappingNode):
        n = 1 + sum(_expanded_nodes_yaml(k, memo) + _expanded_nodes_yaml(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        n = 1 + sum(_expanded_nodes_yaml(v, memo) for v in node.value)
    else:
        n = 1
    memo[key] = n
    return n


def check_config_files(paths) -> None:
    """Read every config file Snakemake was given strictly (read_config_file); raises ConfigError."""
    for p in paths:
        read_config_file(p)


def deep_update(base: dict, new: dict) -> dict:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            deep_update(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base



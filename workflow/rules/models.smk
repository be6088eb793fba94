# Models as local directories: the embedded GGUF converted once (embedded_model), Hub models snapshotted
# once at their pinned revision (download_model). Both are local rules, so GPU jobs never download.
import re

EMBEDDED_MODELS = [n for n, e in config["models"].items() if e["source"] == "embedded"]
HUB_MODELS = [n for n, e in config["models"].items() if e["source"] == "hub"]


rule embedded_model:
    input:
        code("models:embedded_model"),
    output:
        model_dir=directory(run_out("resources/models/{model}")),
    log:
        run_out("logs/embedded_model/{model}.log"),
    benchmark:
        bench("embedded_model", "logs/embedded_model/{model}.log")
    wildcard_constraints:
        model="|".join(map(re.escape, EMBEDDED_MODELS)) or "(?!)",
    localrule: True
    conda:
        "../../envs/sampling.yaml"
    params:
        func="models:embedded_model",
        package=lambda wc: config["models"][wc.model]["id"],
        dtype=lambda wc: config["models"][wc.model].get("dtype", "bfloat16"),
    script:
        RUN


# On the submit host, which needs the network (or, with HF_HUB_OFFLINE=1, a cache filled beforehand):
# the cache (hub.cache_dir, else HF_HOME) and hub.models_dir must be on a file system the compute nodes
# see, because the linked files point into the cache. ~560 GB for config/paper.yaml (README).
rule download_model:
    input:
        code("models:download_model"),
    output:
        model_dir=directory(run_out(f"{hub_models_dir(config)}/{{model}}")),
    log:
        run_out("logs/download_model/{model}.log"),
    benchmark:
        bench("download_model", "logs/download_model/{model}.log")
    wildcard_constraints:
        model="|".join(map(re.escape, HUB_MODELS)) or "(?!)",
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    params:
        func="models:download_model",
        # only what decides the files: editing e.g. max_model_len must not refetch (and rerun every job)
        entry=lambda wc: {k: config["models"][wc.model].get(k) for k in ("id", "revision", "trust_remote_code")},
        cache_dir=config["hub"]["cache_dir"],
    script:
        RUN

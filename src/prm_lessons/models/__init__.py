"""Where models come from (the hub, the embedded default) and the PRM model class.

Modules: prm, embedded, hub.
"""

"""The FORGE dashboard's shared pieces: cached access to the library, UI helpers and charts.

Pages (in ../pages) call these and `forge_core`; no FORGE logic lives here or in the pages.
"""

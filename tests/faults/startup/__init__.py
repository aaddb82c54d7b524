"""The folder a test puts first on a process's PYTHONPATH for polybeam's fault hooks (see sitecustomize)."""

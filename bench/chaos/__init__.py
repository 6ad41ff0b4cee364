"""The chaos-test API's figures (``python -m bench.chaos``): see ``__main__``."""

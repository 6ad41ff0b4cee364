"""Playing: the one ``Cluster`` every mode shares (``chaos``, with its waits and history), the
one engine that plays a scenario file's steps on it (``engine``), one ``Backend`` per mode
(``simcluster``, ``realcluster``, ``attach``; what the process backends share:
``processes``, ``collect``, ``request``, ``agents``, ``leftovers``), the doors of a file run
(``sim``, ``real``, ``attach``) and the arrays of real runs (``arrays``, ``arrayrun``).
"""

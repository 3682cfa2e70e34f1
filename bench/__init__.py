"""What runs the experiments, imported as ``skewbench.bench`` (the library is :mod:`skewbench`).

* Simulation: :mod:`.study` (a grid of simulations → one tidy CSV, ``skewbench simulate``),
  :mod:`.paper_study` with :mod:`.papers` (the papers' experiments at their sizes, ``make study``),
  :mod:`.speed` and :mod:`.trace_speed` (routing rates and trace loading, ``skewbench speed``).
* The Spark cluster benchmark: :mod:`.studyfile` (experiments as YAML study files in ``bench/studies/``),
  :mod:`.driver` (``skewbench bench``, ``make bench``: every point a run of the Spark pipeline in
  :mod:`.spark` with one of the apps in :mod:`.apps`), :mod:`.calibration` (the engine calibration of a
  bench that brings none), :mod:`.prediction` (the simulator's prediction of each run, through an engine
  model), :mod:`.sustainable` (sustainable-throughput search) and :mod:`.comparisons` (bench vs papers).
* Shared: :mod:`.provenance` (what every result file records), :mod:`.progress` (progress lines) and
  :mod:`.interrupts` (Ctrl-C at safe points).

Reports from the result files are :mod:`skewbench.analysis`.  Guide: ``docs/architecture.md``.
"""

"""Arms shardbudget's test hooks in this process and the processes it starts.

`shardbudget.measure.harness.protocol.armed_faults` reads SHARDBUDGET_FAULT only where this module is
importable from the tests/hooks/ folder of the source tree the package came from: tests/conftest.py
puts the folder on sys.path and on PYTHONPATH (for the console script and the measurement ranks).
An installed build has no such folder, so the variable does nothing there (issue 33, item 14).
"""

ARMED = True

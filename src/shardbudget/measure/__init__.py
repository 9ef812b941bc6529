"""Measurement: a torch.distributed collective benchmark, readers for benchmark logs, and what the
measurements say about the model. Three subpackages, by role:

    harness     `shardbudget measure` (``python -m shardbudget.measure``, torchrun's ``-m``): run
                real collectives between real processes and record them; `lab` runs it in network
                namespaces
    logs        read what was measured: nccl-tests / rccl-tests text and -J JSON, shardbudget's own
                JSON, NCCL's INFO lines, into `MeasurementSet`s
    analysis    measurements against the model: `fit` (a calibrated profile) and `check` (is a
                result normal, and if not, the likely cause)

The three import each other one way only: analysis reads logs; harness and logs import neither of the
others (`MEASURE_PARTS` in tests/unit/test_structure.py holds that).

May import: the ground floor, fabric and comm (LAYERS in tests/unit/test_structure.py).
"""

"""Calibration: the public measurements of the repository's data/ folder read, the catalog's measured
constants fitted on them and written into the catalog, and the model validated against them.

    python -m shardbudget.calibrate            # fit and write the fitted entries of the catalog
    python -m shardbudget.calibrate --check    # exit 1 naming every entry that differs from a fresh fit
    python -m shardbudget.calibrate --report   # the model's known defects (data/falls.csv's known rows)

The parts, each one job:

    paths                   where data/ is (inside the checkout, never beside it)
    nccl_rules, nccl_tests  data/nccl_tests.csv: every row kept or dropped by a rule, and priced
    measured_comm           data/measured_comm.csv (aiconfigurator-core 0.12.0): NCCL and engine rows
    xla_nvl72, shm_public   XLA's GB200/GB300 NVL72 tables; public host-staged (SHM) rings
    samples                 those rows reduced to what the estimators read
    constants               the fitted constants (`Calibration`), `apply` to a catalog, `neutral`
    fit_nccl, fit_pcie, fit_engines, fallback
                            the estimators below, and a held-out fold's fallbacks
    fit                     `calibrate`: every estimator in order; `fit_all` on data/
    tables, toml_edit, check
                            which catalog entries are fitted, in which digits; the TOML line editor;
                            `--check` and the fixed-point write
    describe                the fitted constants as text (`--print`)
    loso                    leave one system out (benchmarks/loso.py prints it)
    switches, edge_rows, falls, report
                            the model's kernel-switch falls: found by a scan, the measured rows at
                            each, the MEASURED and KNOWN lists (data/falls.csv: `--falls` writes
                            it), the known-defects report
    decode, serving         decode and served-TPOT cases from published engine measurements

Every constant is fitted by a closed-form estimator on a named subset of rows, so that a held-out
fold (loso.py) can refit them without one system and predict that system with what is left:

  ring_efficiency[g]        single-node ring busbw at >= 128 MiB over the fabric's achievable figure,
                            median over the NVLink systems (g = 2, 4)
  arch[gen] LL floor        NCCL all-reduce at <= 8 KiB: t = baseLat + offset + 2(g-1) x hop x scale,
                            least squares over g = 2, 4, 8 (offset only on PCIe-only generations)
  arch[gen] Simple floor    the same line through the ring Simple rows below 32 MiB; LL128 takes
                            the LL parameters
  arch[gen] LL128 step      where XLA's NVL72 all-gather rings (33-72 GPUs) run LL128: the median
                            of (t - n / bw - LL128's base) / (g - 1) over tuning.cc's 1.9 us
                            (fit_ll128_hop; Blackwell only, the others keep LL's factor)
  NVLS small fixed cost     a[gen] + b log2(g): NVLS small-message rows' (t - n / bw), HGX 4-8 GPUs
                            (measured_comm) and XLA's GB200 NVL72 table at 8-72 GPUs less its launch
                            (xla_nvl72.py): b by least squares over every row,
                            a[gen] the median of (t - n / bw - b log2 g) of its rows
  nvls efficiency[fabric]   NVLS rows at >= 128 MiB: algbw over link x g/(g+1), median
  engines[e] kernels        the engines' custom all-reduce rows under CUDA graphs: launch per generation
                            and per peer (<= 4 KiB one-shot rows), one- and two-shot efficiencies by
                            GPU count and generation, the two-shot's second barrier, the multi-node
                            NVLink kernels apart (fit_engines)
  PCIe platform figures     large-message rings of PCIe systems: the ring's bottleneck (ring_path.py)
                            names the constant it measures: a host path (busbw x its uses), a
                            host-staged socket crossing, a P2P fabric

A constant whose rows are all held out falls back: a GPU generation's floors to a fit on its own
generation's nccl-tests tables (switch and PCIe boxes; LL and Simple rows that are latency-bound;
measured at one group size only, the other generations' mean line scaled to it: _scaled_floor),
else to the mean of the other generations'; a fabric's NVLS efficiency to its generation's; a
CPU's host path to no limit and its socket stream to its socket link; an engine's launch and
two-shot barrier on a generation without engine rows whose NCCL floor was measured, to the other
NVLink generations' cost per NCCL floor times its floor (engine_fallback); TensorRT-LLM's multi-node
NVLink kernels (GB300 only) to the single-node one-shot's floor, the ring's busbw and, for the
two-shot's second Lamport stage, one NVLink LL step (custom_kernels.two_shot_extra_s); a host-staged (SHM) fabric to
the median of what one-socket SHM rings carry on the other hosts of its PCIe generation, public
(data/shm_public.csv) and fitted (fit_shm_hop): shm_prior; a PCIe box's one-shot
kernels to the link's rate where each engine's slowest NVLink throughput is above it
(pcie_kernel_efficiency); a fabric to its catalog estimate.

May import: the ground floor, fabric, comm, model, engines and step (LAYERS in
tests/unit/test_structure.py); nothing imports it but its own entry point, the tests and the benchmarks.
"""

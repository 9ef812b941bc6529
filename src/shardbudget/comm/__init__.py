"""The collectives layer: what a collective costs on a group of GPUs, as the libraries run it.

    op              CollectiveOp: the operations, their spellings and nccl-tests' busbw factor
    nccl_algos      NCCL's algorithms and protocols as straight lines (src/graph/tuning.cc)
    custom_kernels  the engines' one-shot / two-shot kernels through peer memory
    lines           who takes part in a collective, its candidate lines and how one is chosen
    collectives     make_group, collective_cost, sweep, crossover: the entry points

May import: the root modules and `fabric`.
"""

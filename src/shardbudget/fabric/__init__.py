"""The fabric layer: the hardware catalog loaded and validated, a node's topology, and a node's own
description of itself (`nvidia-smi topo`, NCCL's topology XML) turned into a profile.

    hardware        Fabric, GPU, CPU, PcieTree, System, Catalog: frozen dataclasses of SI floats
    catalog         load_catalog: the TOML files read, merged and validated (with user --catalog files)
    nccl_constants  NCCL's tuning constants and the engines' kernel constants as the catalog stores them
    ring_path       the path a ring over g GPUs of one node takes: PCIe distance, transport, shared links
    topo_read       `shardbudget topo`'s input: `nvidia-smi topo -m`, `topo -p2p r` and NCCL topology XML
    topo_build      the catalog entries (fabrics, CPU, NICs, P2P) a read topology is described with
    topo_profile    `shardbudget topo`: a read topology as a system profile in catalog format, written

May import: the root modules (units, dtypes, errors, atomic). Nothing above it.
"""

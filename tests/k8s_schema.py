"""The manifests `deploy --emit k8s` writes, read back and held to the Kubernetes 1.33 schema
(kubernetes-validate, which carries the OpenAPI schema of each release). A CRD's pods are held to it
as PodTemplates (LeaderWorkerSet); NVIDIA's ComputeDomain, which the schema does not carry, to the
fields of the DRA driver's API reference. Callers skip where kubernetes-validate is missing
(pytest.importorskip) before they call it."""

from __future__ import annotations

import yaml

VERSION = "1.33"


def pod_templates(doc: dict) -> list[tuple[dict, dict]]:
    """(pod template metadata, pod spec) of a document's pods: a Deployment's or StatefulSet's, a
    LeaderWorkerSet's leader and worker."""
    spec = doc.get("spec", {})
    if "template" in spec:
        return [(spec["template"].get("metadata", {}), spec["template"]["spec"])]
    lwt = spec.get("leaderWorkerTemplate")
    if not lwt:
        return []
    return [(lwt[k].get("metadata", {}), lwt[k]["spec"]) for k in ("leaderTemplate", "workerTemplate")]


def valid_docs(text: str) -> list[dict]:
    """The documents of a manifests.yaml, each held to the schema (module doc)."""
    import kubernetes_validate as kv

    docs = list(yaml.safe_load_all(text))
    for d in docs:
        if d["kind"] == "ComputeDomain":
            assert d["apiVersion"] == "resource.nvidia.com/v1beta1" and set(d["spec"]) == {"numNodes", "channel"}
            assert set(d["spec"]["channel"]) == {"resourceClaimTemplate"}
        elif d["kind"] == "LeaderWorkerSet":
            for meta, pod in pod_templates(d):
                template = {"metadata": meta, "spec": pod} if meta else {"spec": pod}
                kv.validate(
                    {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template},
                    VERSION,
                    strict=True,
                )
        else:
            kv.validate(d, VERSION, strict=True)
    return docs

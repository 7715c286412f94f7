#!/usr/bin/env python3
"""Offline schema and consistency check of iofleet's Kubernetes manifests.

No cluster and no network: this validates the fields that matter for each kind
we ship (apiVersion/kind/metadata.name, selectors matching pod template labels,
containers with pinned images, ports, volume mounts referring to declared
volumes, env/$(VAR) references, probes referring to declared ports, resource
quantities, Service/ServiceMonitor targets, PVC and ConfigMap references), and
the kustomize files (every referenced path exists).

usage: k8s-schema-check.py [--render] [--no-render] PATH...
  PATH: a directory (all *.yaml/*.yml under it, kustomize layouts included) or
  a manifest file. With --render (default when `kubectl` is on PATH), every
  directory holding a kustomization.yaml of kind Kustomization is also rendered
  with `kubectl kustomize` (offline) and the rendered objects are checked as
  one set, cross references included.
Exit status: 0 clean, 1 problems found, 2 usage error.
Needs PyYAML (Debian package python3-yaml).
"""
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:  # pragma: no cover
    sys.stderr.write("k8s-schema-check: PyYAML missing (apt-get install python3-yaml)\n")
    sys.exit(2)

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
VAR_REF = re.compile(r"(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)")

API_VERSIONS = {
    "Namespace": {"v1"},
    "Service": {"v1"},
    "ConfigMap": {"v1"},
    "Secret": {"v1"},
    "ServiceAccount": {"v1"},
    "PersistentVolumeClaim": {"v1"},
    "Deployment": {"apps/v1"},
    "DaemonSet": {"apps/v1"},
    "StatefulSet": {"apps/v1"},
    "ServiceMonitor": {"monitoring.coreos.com/v1"},
    "PodDisruptionBudget": {"policy/v1"},
}
KUSTOMIZE = {
    "Kustomization": "kustomize.config.k8s.io/v1beta1",
    "Component": "kustomize.config.k8s.io/v1alpha1",
}
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}
CONTAINER_FIELDS = {
    "name", "image", "imagePullPolicy", "command", "args", "workingDir", "ports", "env",
    "envFrom", "resources", "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe",
    "startupProbe", "lifecycle", "securityContext", "stdin", "tty", "terminationMessagePath",
    "terminationMessagePolicy", "resizePolicy", "restartPolicy",
}
POD_FIELDS = {
    "containers", "initContainers", "volumes", "nodeSelector", "tolerations", "affinity",
    "securityContext", "serviceAccountName", "automountServiceAccountToken",
    "terminationGracePeriodSeconds", "hostNetwork", "hostPID", "hostIPC", "dnsPolicy",
    "priorityClassName", "restartPolicy", "imagePullSecrets", "topologySpreadConstraints",
    "shareProcessNamespace", "enableServiceLinks", "runtimeClassName", "hostname",
}
VOLUME_SOURCES = {
    "hostPath", "emptyDir", "persistentVolumeClaim", "configMap", "secret", "projected",
    "downwardAPI", "csi", "ephemeral",
}
RESOURCE_NAMES = {"cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi"}


class Checker:
    def __init__(self):
        self.errors = []

    def err(self, where, msg):
        self.errors.append(f"{where}: {msg}")

    # ---- generic -------------------------------------------------------------
    def check_object(self, where, doc):
        if not isinstance(doc, dict):
            self.err(where, "document is not a mapping")
            return False
        kind, api = doc.get("kind"), doc.get("apiVersion")
        if not isinstance(kind, str) or not kind:
            self.err(where, "missing kind")
            return False
        if not isinstance(api, str) or not api:
            self.err(where, f"{kind}: missing apiVersion")
            return False
        if kind in KUSTOMIZE:
            return True
        if kind not in API_VERSIONS:
            self.err(where, f"unknown kind {kind!r} (teach deploy/checks/k8s-schema-check.py about it)")
            return False
        if api not in API_VERSIONS[kind]:
            self.err(where, f"{kind}: apiVersion {api!r}, expected one of {sorted(API_VERSIONS[kind])}")
        md = doc.get("metadata")
        if not isinstance(md, dict):
            self.err(where, f"{kind}: missing metadata")
            return False
        name = md.get("name")
        where = f"{where}: {kind}/{name}"
        if not isinstance(name, str) or not name:
            self.err(where, "metadata.name missing")
        elif not DNS1123_SUBDOMAIN.match(name) or len(name) > 253:
            self.err(where, "metadata.name is not a DNS-1123 subdomain")
        for field in ("labels", "annotations"):
            m = md.get(field)
            if m is None:
                continue
            if not isinstance(m, dict):
                self.err(where, f"metadata.{field} is not a mapping")
                continue
            for k, v in m.items():
                if not isinstance(v, str):
                    self.err(where, f"metadata.{field}[{k}] = {v!r} must be a string (quote it)")
        spec_check = getattr(self, "check_" + kind, None)
        if spec_check:
            spec_check(where, doc)
        return True

    def quantity(self, where, what, v):
        if isinstance(v, bool) or not isinstance(v, (int, float, str)) or not QUANTITY.match(str(v)):
            self.err(where, f"{what} = {v!r} is not a Kubernetes quantity")
            return None
        s = str(v)
        mult = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
                "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
        m = re.match(r"^([0-9.]+)([A-Za-z]*)$", s)
        return float(m.group(1)) * mult.get(m.group(2), 1)

    def selector_labels(self, where, sel):
        if not isinstance(sel, dict) or not isinstance(sel.get("matchLabels"), dict) or not sel["matchLabels"]:
            self.err(where, "spec.selector.matchLabels missing or empty")
            return {}
        return sel["matchLabels"]

    # ---- kinds ---------------------------------------------------------------
    def check_Namespace(self, where, doc):
        if not DNS1123_LABEL.match(doc["metadata"].get("name", "")):
            self.err(where, "namespace name is not a DNS-1123 label")

    def check_ConfigMap(self, where, doc):
        for k, v in (doc.get("data") or {}).items():
            if not isinstance(v, str):
                self.err(where, f"data[{k}] must be a string")

    def check_PersistentVolumeClaim(self, where, doc):
        spec = doc.get("spec") or {}
        modes = spec.get("accessModes")
        valid = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"}
        if not isinstance(modes, list) or not modes or any(m not in valid for m in modes):
            self.err(where, f"spec.accessModes {modes!r} invalid")
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        if storage is None:
            self.err(where, "spec.resources.requests.storage missing")
        else:
            self.quantity(where, "spec.resources.requests.storage", storage)

    def check_Service(self, where, doc):
        spec = doc.get("spec") or {}
        stype = spec.get("type", "ClusterIP")
        if stype not in {"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"}:
            self.err(where, f"spec.type {stype!r} invalid")
        if stype != "ExternalName":
            if not isinstance(spec.get("selector"), dict) or not spec["selector"]:
                self.err(where, "spec.selector missing or empty")
        ports = spec.get("ports")
        if not isinstance(ports, list) or not ports:
            self.err(where, "spec.ports missing or empty")
            return
        names = set()
        for i, p in enumerate(ports):
            pw = f"{where}: spec.ports[{i}]"
            if not isinstance(p, dict):
                self.err(pw, "not a mapping")
                continue
            port = p.get("port")
            if not isinstance(port, int) or not 1 <= port <= 65535:
                self.err(pw, f"port {port!r} invalid")
            if len(ports) > 1 and not p.get("name"):
                self.err(pw, "name required when a Service has several ports")
            if p.get("name") and p.get("name") in names:
                self.err(pw, f"duplicate port name {p.get('name')!r}")
            names.add(p.get("name"))
            if p.get("protocol", "TCP") not in {"TCP", "UDP", "SCTP"}:
                self.err(pw, f"protocol {p.get('protocol')!r} invalid")
            tp = p.get("targetPort")
            if tp is not None and not isinstance(tp, (int, str)):
                self.err(pw, f"targetPort {tp!r} invalid")

    def check_ServiceMonitor(self, where, doc):
        spec = doc.get("spec") or {}
        self.selector_labels(where, spec.get("selector"))
        eps = spec.get("endpoints")
        if not isinstance(eps, list) or not eps:
            self.err(where, "spec.endpoints missing or empty")
            return
        for i, e in enumerate(eps):
            if not isinstance(e, dict) or not (e.get("port") or e.get("targetPort")):
                self.err(where, f"spec.endpoints[{i}] needs port (a Service port name)")
            elif e.get("path") is not None and not str(e.get("path")).startswith("/"):
                self.err(where, f"spec.endpoints[{i}].path must start with /")

    def check_Deployment(self, where, doc):
        spec = doc.get("spec") or {}
        r = spec.get("replicas", 1)
        if not isinstance(r, int) or r < 0:
            self.err(where, f"spec.replicas {r!r} invalid")
        st = (spec.get("strategy") or {}).get("type", "RollingUpdate")
        if st not in {"RollingUpdate", "Recreate"}:
            self.err(where, f"spec.strategy.type {st!r} invalid")
        self.check_workload(where, spec)

    def check_DaemonSet(self, where, doc):
        spec = doc.get("spec") or {}
        st = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
        if st not in {"RollingUpdate", "OnDelete"}:
            self.err(where, f"spec.updateStrategy.type {st!r} invalid")
        self.check_workload(where, spec)

    def check_StatefulSet(self, where, doc):
        spec = doc.get("spec") or {}
        if not spec.get("serviceName"):
            self.err(where, "spec.serviceName missing (the headless Service naming the pods)")
        r = spec.get("replicas", 1)
        if not isinstance(r, int) or r < 0:
            self.err(where, f"spec.replicas {r!r} invalid")
        if spec.get("podManagementPolicy", "OrderedReady") not in {"OrderedReady", "Parallel"}:
            self.err(where, f"spec.podManagementPolicy {spec.get('podManagementPolicy')!r} invalid")
        self.check_workload(where, spec)

    def check_PodDisruptionBudget(self, where, doc):
        spec = doc.get("spec") or {}
        self.selector_labels(where, spec.get("selector"))
        given = [k for k in ("minAvailable", "maxUnavailable") if k in spec]
        if len(given) != 1:
            self.err(where, f"spec needs exactly one of minAvailable and maxUnavailable, has {given}")
        pol = spec.get("unhealthyPodEvictionPolicy")
        if pol is not None and pol not in {"IfHealthyBudget", "AlwaysAllow"}:
            self.err(where, f"spec.unhealthyPodEvictionPolicy {pol!r}: IfHealthyBudget or AlwaysAllow")
        for k in given:
            v = spec[k]
            if not (isinstance(v, int) and v >= 0) and not (isinstance(v, str) and re.match(r"^[0-9]+%$", v)):
                self.err(where, f"spec.{k} {v!r}: a count or a percentage")

    def check_seccomp(self, where, sc):
        prof = (sc or {}).get("seccompProfile") if isinstance(sc, dict) else None
        if prof is None:
            return
        t = prof.get("type") if isinstance(prof, dict) else None
        if t not in {"RuntimeDefault", "Localhost", "Unconfined"}:
            self.err(where, f"seccompProfile.type {t!r} invalid")
        elif t == "Localhost":
            lp = prof.get("localhostProfile")
            if not isinstance(lp, str) or not lp or lp.startswith("/") or ".." in lp.split("/"):
                self.err(where, f"seccompProfile.localhostProfile {lp!r}: a path relative to the kubelet's seccomp dir")
            elif self.repo and os.path.basename(lp) not in self.seccomp_profiles:
                self.err(where, f"seccompProfile.localhostProfile {lp!r}: no deploy/seccomp/{os.path.basename(lp)} (or script making it) to install")
        elif prof.get("localhostProfile") is not None:
            self.err(where, "seccompProfile.localhostProfile is only for type Localhost")

    def check_workload(self, where, spec):
        match = self.selector_labels(where, spec.get("selector"))
        tmpl = spec.get("template")
        if not isinstance(tmpl, dict):
            self.err(where, "spec.template missing")
            return
        tlabels = (tmpl.get("metadata") or {}).get("labels") or {}
        for k, v in match.items():
            if tlabels.get(k) != v:
                self.err(where, f"spec.selector.matchLabels {k}={v} not in spec.template.metadata.labels")
        pod = tmpl.get("spec")
        if not isinstance(pod, dict):
            self.err(where, "spec.template.spec missing")
            return
        for k in pod:
            if k not in POD_FIELDS:
                self.err(where, f"spec.template.spec.{k}: unknown pod field")
        self.check_seccomp(f"{where}: spec.template.spec.securityContext", pod.get("securityContext"))
        volumes = {}
        for i, v in enumerate(pod.get("volumes") or []):
            vw = f"{where}: volumes[{i}]"
            name = v.get("name") if isinstance(v, dict) else None
            if not name or not DNS1123_LABEL.match(str(name)):
                self.err(vw, f"name {name!r} invalid")
                continue
            if name in volumes:
                self.err(vw, f"duplicate volume {name!r}")
            sources = [s for s in v if s != "name"]
            if len(sources) != 1 or sources[0] not in VOLUME_SOURCES:
                self.err(vw, f"volume {name!r} needs exactly one known source, has {sources}")
            elif sources[0] == "hostPath":
                hp = v["hostPath"] or {}
                if not str(hp.get("path", "")).startswith("/"):
                    self.err(vw, "hostPath.path must be absolute")
            elif sources[0] == "persistentVolumeClaim":
                if not (v["persistentVolumeClaim"] or {}).get("claimName"):
                    self.err(vw, "persistentVolumeClaim.claimName missing")
            volumes[name] = v
        containers = pod.get("containers")
        if not isinstance(containers, list) or not containers:
            self.err(where, "spec.template.spec.containers missing or empty")
            return
        seen = set()
        used_volumes = set()
        for i, c in enumerate(list(containers) + list(pod.get("initContainers") or [])):
            self.check_container(where, i, c, volumes, seen, used_volumes)
        for name in volumes:
            if name not in used_volumes:
                self.err(where, f"volume {name!r} is mounted by no container")

    def check_container(self, where, i, c, volumes, seen, used_volumes):
        if not isinstance(c, dict):
            self.err(where, f"containers[{i}] not a mapping")
            return
        name = c.get("name")
        cw = f"{where}: container {name!r}"
        if not name or not DNS1123_LABEL.match(str(name)):
            self.err(cw, "name missing or not a DNS-1123 label")
        if name in seen:
            self.err(cw, "duplicate container name")
        seen.add(name)
        for k in c:
            if k not in CONTAINER_FIELDS:
                self.err(cw, f"unknown container field {k!r}")
        self.check_seccomp(f"{cw}: securityContext", c.get("securityContext"))
        image = c.get("image")
        if not isinstance(image, str) or not image:
            self.err(cw, "image missing")
        else:
            last = image.rsplit("/", 1)[-1]
            if "@sha256:" not in image and ":" not in last:
                self.err(cw, f"image {image!r} has no tag (pin a version)")
            elif last.endswith(":latest"):
                self.err(cw, f"image {image!r} uses :latest")
        if c.get("imagePullPolicy", "IfNotPresent") not in {"Always", "IfNotPresent", "Never"}:
            self.err(cw, f"imagePullPolicy {c.get('imagePullPolicy')!r} invalid")
        port_names = set()
        for j, p in enumerate(c.get("ports") or []):
            cp = p.get("containerPort") if isinstance(p, dict) else None
            if not isinstance(cp, int) or not 1 <= cp <= 65535:
                self.err(cw, f"ports[{j}].containerPort {cp!r} invalid")
            pn = p.get("name") if isinstance(p, dict) else None
            if pn is not None:
                if not DNS1123_LABEL.match(str(pn)) or len(str(pn)) > 15:
                    self.err(cw, f"ports[{j}].name {pn!r} invalid (DNS label, <= 15 chars)")
                if pn in port_names:
                    self.err(cw, f"duplicate port name {pn!r}")
                port_names.add(pn)
            if isinstance(p, dict) and p.get("protocol", "TCP") not in {"TCP", "UDP", "SCTP"}:
                self.err(cw, f"ports[{j}].protocol invalid")
        env_names = set()
        for j, e in enumerate(c.get("env") or []):
            if not isinstance(e, dict) or not e.get("name"):
                self.err(cw, f"env[{j}] needs a name")
                continue
            env_names.add(e["name"])
            if "value" in e and "valueFrom" in e:
                self.err(cw, f"env {e['name']}: both value and valueFrom")
            vf = e.get("valueFrom")
            if vf is not None:
                if not isinstance(vf, dict) or len(vf) != 1:
                    self.err(cw, f"env {e['name']}: valueFrom needs exactly one source")
                elif "fieldRef" in vf and not (vf["fieldRef"] or {}).get("fieldPath"):
                    self.err(cw, f"env {e['name']}: fieldRef.fieldPath missing")
                elif "secretKeyRef" in vf and not ((vf["secretKeyRef"] or {}).get("name") and (vf["secretKeyRef"] or {}).get("key")):
                    self.err(cw, f"env {e['name']}: secretKeyRef needs name and key")
                elif "configMapKeyRef" in vf:
                    ref = vf["configMapKeyRef"] or {}
                    if not ref.get("name") or not ref.get("key"):
                        self.err(cw, f"env {e['name']}: configMapKeyRef needs name and key")
            elif "value" in e and not isinstance(e["value"], str):
                self.err(cw, f"env {e['name']}: value must be a string (quote it)")
        for field in ("command", "args"):
            vals = c.get(field)
            if vals is None:
                continue
            if not isinstance(vals, list) or any(not isinstance(a, str) for a in vals):
                self.err(cw, f"{field} must be a list of strings")
                continue
            for a in vals:
                for ref in VAR_REF.findall(a):
                    if ref not in env_names:
                        self.err(cw, f"{field}: $({ref}) is not defined in env (it would stay literal)")
        mount_paths = set()
        for j, m in enumerate(c.get("volumeMounts") or []):
            mn = m.get("name") if isinstance(m, dict) else None
            if mn not in volumes:
                self.err(cw, f"volumeMounts[{j}] refers to undeclared volume {mn!r}")
            used_volumes.add(mn)
            mp = m.get("mountPath", "") if isinstance(m, dict) else ""
            if not str(mp).startswith("/"):
                self.err(cw, f"volumeMounts[{j}].mountPath {mp!r} must be absolute")
            if mp in mount_paths:
                self.err(cw, f"duplicate mountPath {mp!r}")
            mount_paths.add(mp)
            prop = m.get("mountPropagation") if isinstance(m, dict) else None
            if prop not in (None, "None", "HostToContainer", "Bidirectional"):
                self.err(cw, f"volumeMounts[{j}].mountPropagation {prop!r} invalid")
        for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
            probe = c.get(probe_name)
            if probe is None:
                continue
            handlers = [h for h in ("httpGet", "tcpSocket", "exec", "grpc") if h in probe]
            if len(handlers) != 1:
                self.err(cw, f"{probe_name} needs exactly one handler, has {handlers}")
                continue
            port = (probe.get(handlers[0]) or {}).get("port")
            if isinstance(port, str) and port not in port_names:
                self.err(cw, f"{probe_name} port {port!r} is not a named container port")
        res = c.get("resources")
        if not isinstance(res, dict) or not isinstance(res.get("requests"), dict):
            self.err(cw, "resources.requests missing (set cpu and memory requests)")
            res = res if isinstance(res, dict) else {}
        elif not isinstance(res.get("limits"), dict) or "memory" not in res["limits"]:
            self.err(cw, "resources.limits.memory missing")
        reqs, lims = res.get("requests") or {}, res.get("limits") or {}
        for section, vals in (("requests", reqs), ("limits", lims)):
            for k, v in vals.items():
                if k not in RESOURCE_NAMES:
                    self.err(cw, f"resources.{section}.{k}: unknown resource")
                self.quantity(cw, f"resources.{section}.{k}", v)
        for k in set(reqs) & set(lims):
            r, l = self.quantity(cw, "", reqs[k]), self.quantity(cw, "", lims[k])
            if r is not None and l is not None and r > l:
                self.err(cw, f"resources.requests.{k} ({reqs[k]}) exceeds limits.{k} ({lims[k]})")

    # ---- cross references over one set of objects ------------------------------
    def cross_check(self, label, objs):
        by_kind = {}
        for where, d in objs:
            by_kind.setdefault(d.get("kind"), []).append((where, d))

        def names(kind):
            return {(d.get("metadata") or {}).get("name") for _, d in by_kind.get(kind, [])}

        pvcs, cms = names("PersistentVolumeClaim"), names("ConfigMap") | self.generated_cms
        secrets = names("Secret") | self.generated_secrets
        headless = {(d.get("metadata") or {}).get("name") for _, d in by_kind.get("Service", [])
                    if (d.get("spec") or {}).get("clusterIP") == "None"}
        workloads = [(w, d) for k in WORKLOADS for (w, d) in by_kind.get(k, [])]
        for where, d in workloads:
            pod = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
            w = f"{label}: {d['kind']}/{d['metadata'].get('name')}"
            for v in pod.get("volumes") or []:
                claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
                if claim and claim not in pvcs:
                    self.err(w, f"volume {v.get('name')!r}: PersistentVolumeClaim {claim!r} not defined")
                sec = (v.get("secret") or {}).get("secretName")
                if sec and sec not in secrets and not (v.get("secret") or {}).get("optional"):
                    self.err(w, f"volume {v.get('name')!r}: Secret {sec!r} not defined")
                cmv = (v.get("configMap") or {}).get("name")
                if cmv and cmv not in cms:
                    self.err(w, f"volume {v.get('name')!r}: ConfigMap {cmv!r} not defined")
            if d.get("kind") == "StatefulSet":
                sn = (d.get("spec") or {}).get("serviceName")
                if sn and sn not in headless:
                    self.err(w, f"spec.serviceName {sn!r} is not a headless Service (clusterIP: None) here")
            for c in pod.get("containers") or []:
                for e in c.get("env") or []:
                    ref = ((e.get("valueFrom") or {}).get("configMapKeyRef") or {})
                    if ref.get("name") and ref["name"] not in cms and not ref.get("optional"):
                        self.err(w, f"env {e.get('name')}: ConfigMap {ref['name']!r} not defined")
                    ref = ((e.get("valueFrom") or {}).get("secretKeyRef") or {})
                    if ref.get("name") and ref["name"] not in secrets and not ref.get("optional"):
                        self.err(w, f"env {e.get('name')}: Secret {ref['name']!r} not defined")
        for where, pdb in by_kind.get("PodDisruptionBudget", []):
            w = f"{label}: PodDisruptionBudget/{pdb['metadata'].get('name')}"
            ml = (((pdb.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})
            matched = [d for _, d in workloads
                       if all((((d.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}).get(k) == v
                              for k, v in ml.items())] if ml else []
            if ml and not matched:
                self.err(w, f"selector {ml} matches no workload's pod labels")
            # A budget its pods can never leave room in blocks every node drain
            # (kubectl drain waits forever): with R replicas, minAvailable must
            # be below R and maxUnavailable above 0. DaemonSets have no replicas.
            spec = pdb.get("spec") or {}
            if matched and all(d.get("kind") in ("Deployment", "StatefulSet") for d in matched):
                replicas = sum(int((d.get("spec") or {}).get("replicas", 1)) for d in matched)
                ma, mu = spec.get("minAvailable"), spec.get("maxUnavailable")
                if isinstance(ma, int) and ma >= replicas:
                    self.err(w, f"minAvailable {ma} with {replicas} replicas: no voluntary disruption is ever allowed (a drain blocks)")
                if isinstance(ma, str) and ma.endswith("%") and int(ma[:-1]) >= 100:
                    self.err(w, f"minAvailable {ma}: no voluntary disruption is ever allowed (a drain blocks)")
                if mu in (0, "0%"):
                    self.err(w, f"maxUnavailable {mu}: no voluntary disruption is ever allowed (a drain blocks)")
        for where, svc in by_kind.get("Service", []):
            spec = svc.get("spec") or {}
            sel = spec.get("selector") or {}
            if not sel:
                continue
            w = f"{label}: Service/{svc['metadata'].get('name')}"
            targets = []
            for _, d in workloads:
                tl = ((d.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
                if all(tl.get(k) == v for k, v in sel.items()):
                    targets.append(d)
            if not targets:
                self.err(w, f"selector {sel} matches no workload's pod labels")
                continue
            cports = set()
            for d in targets:
                for c in d["spec"]["template"]["spec"].get("containers") or []:
                    for p in c.get("ports") or []:
                        cports.add(p.get("name"))
                        cports.add(p.get("containerPort"))
            for p in spec.get("ports") or []:
                tp = p.get("targetPort", p.get("port"))
                if tp not in cports:
                    self.err(w, f"port {p.get('name')!r}: targetPort {tp!r} is not a port of the selected pods")
        for where, sm in by_kind.get("ServiceMonitor", []):
            w = f"{label}: ServiceMonitor/{sm['metadata'].get('name')}"
            ml = ((sm.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            svcs = [s for _, s in by_kind.get("Service", [])
                    if all(((s.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in ml.items())]
            if not svcs:
                self.err(w, f"selector {ml} matches no Service's labels")
                continue
            pnames = {p.get("name") for s in svcs for p in (s.get("spec") or {}).get("ports") or []}
            for e in (sm.get("spec") or {}).get("endpoints") or []:
                if e.get("port") and e["port"] not in pnames:
                    self.err(w, f"endpoint port {e['port']!r} is not a port name of the selected Service")

    # ---- kustomize files ---------------------------------------------------------
    def check_kustomization(self, path, doc):
        kind = doc.get("kind")
        if doc.get("apiVersion") != KUSTOMIZE[kind]:
            self.err(path, f"{kind}: apiVersion should be {KUSTOMIZE[kind]}")
        base = os.path.dirname(path)
        for field in ("resources", "components", "bases"):
            for r in doc.get(field) or []:
                if "://" in r or r.startswith("github.com/"):
                    self.err(path, f"{field}: remote reference {r!r} (must render offline)")
                    continue
                target = os.path.normpath(os.path.join(base, r))
                if not os.path.exists(target):
                    self.err(path, f"{field}: {r!r} does not exist")
                elif os.path.isdir(target) and not any(
                        os.path.exists(os.path.join(target, n))
                        for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")):
                    self.err(path, f"{field}: {r!r} has no kustomization.yaml")
        for p in doc.get("patches") or []:
            if isinstance(p, dict) and p.get("path") and not os.path.exists(os.path.join(base, p["path"])):
                self.err(path, f"patches: {p['path']!r} does not exist")
            if isinstance(p, dict) and not p.get("path") and not p.get("patch"):
                self.err(path, "patches: an entry needs path or patch")
        for g in doc.get("secretGenerator") or []:
            if not g.get("name"):
                self.err(path, "secretGenerator: an entry needs a name")
            else:
                self.generated_secrets.add(g["name"])
            for f in g.get("files") or []:
                fp = f.split("=", 1)[-1]
                if not os.path.exists(os.path.join(base, fp)):
                    self.err(path, f"secretGenerator {g.get('name')}: file {fp!r} missing")
        for g in doc.get("configMapGenerator") or []:
            if not g.get("name"):
                self.err(path, "configMapGenerator: an entry needs a name")
            else:
                self.generated_cms.add(g["name"])
            for f in g.get("files") or []:
                fp = f.split("=", 1)[-1]
                if not os.path.exists(os.path.join(base, fp)):
                    self.err(path, f"configMapGenerator {g.get('name')}: file {fp!r} missing")
        for im in doc.get("images") or []:
            if not im.get("name"):
                self.err(path, "images: an entry needs a name")
            if im.get("newTag") == "latest":
                self.err(path, f"images: {im.get('name')} newTag latest")


def load(path):
    with open(path, encoding="utf-8") as f:
        return list(yaml.safe_load_all(f))


def main(argv):
    render = shutil.which("kubectl") is not None
    paths = []
    for a in argv:
        if a == "--render":
            render = True
        elif a == "--no-render":
            render = False
        elif a.startswith("-"):
            sys.stderr.write(__doc__)
            return 2
        else:
            paths.append(a)
    if not paths:
        sys.stderr.write(__doc__)
        return 2
    ck = Checker()
    ck.generated_cms = set()
    ck.generated_secrets = set()
    # Localhost seccomp profiles must be ones the repository ships or makes
    # (deploy/seccomp: a profile file, or the script that derives it on the node).
    here = os.path.dirname(os.path.abspath(__file__))
    seccomp_dir = os.path.join(os.path.dirname(here), "seccomp")
    ck.repo = os.path.isdir(seccomp_dir)
    makers = {"make-agent-profile.py": "iofleet-agent.json"}
    ck.seccomp_profiles = set()
    for f in (os.listdir(seccomp_dir) if ck.repo else []):
        ck.seccomp_profiles.add(makers.get(f, f))
    files, kustomize_dirs = [], []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, fs in os.walk(p):
                dirs.sort()
                for f in sorted(fs):
                    if f.endswith((".yaml", ".yml")):
                        files.append(os.path.join(root, f))
        elif os.path.isfile(p):
            files.append(p)
        else:
            ck.err(p, "no such file or directory")
    objects = []
    nobj = 0
    for f in files:
        try:
            docs = load(f)
        except yaml.YAMLError as e:
            ck.err(f, f"YAML error: {e}")
            continue
        for i, d in enumerate(docs):
            if d is None:
                continue
            where = f if len(docs) == 1 else f"{f}[{i}]"
            if isinstance(d, dict) and d.get("kind") in KUSTOMIZE:
                ck.check_kustomization(f, d)
                if d.get("kind") == "Kustomization":
                    kustomize_dirs.append(os.path.dirname(f))
                continue
            # Strategic-merge patch files referenced by a kustomization are partial
            # objects: check only that they name what they patch.
            if is_patch_file(f):
                if not isinstance(d, dict) or not d.get("kind") or not (d.get("metadata") or {}).get("name"):
                    ck.err(where, "patch must name kind and metadata.name")
                continue
            nobj += 1
            if ck.check_object(where, d):
                objects.append((where, d))
    ck.cross_check("manifests", objects)
    rendered = 0
    if render:
        for kd in kustomize_dirs:
            try:
                out = subprocess.run(["kubectl", "kustomize", kd], check=False, capture_output=True,
                                     text=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired) as e:
                ck.err(kd, f"kubectl kustomize: {e}")
                continue
            if out.returncode != 0:
                ck.err(kd, f"kubectl kustomize failed: {out.stderr.strip()}")
                continue
            robjs = []
            for i, d in enumerate(yaml.safe_load_all(out.stdout)):
                if d is None:
                    continue
                where = f"{kd} (rendered) [{i}]"
                if ck.check_object(where, d):
                    robjs.append((where, d))
            ck.cross_check(f"{kd} (rendered)", robjs)
            rendered += 1
    for e in ck.errors:
        print(e)
    print(f"k8s-schema-check: {len(files)} files, {nobj} objects, {len(kustomize_dirs)} kustomizations"
          f" ({rendered} rendered with kubectl kustomize"
          f"{'' if render else '; kubectl not available or --no-render'}), {len(ck.errors)} problems")
    return 1 if ck.errors else 0


_PATCH_CACHE = {}


def is_patch_file(path):
    """True if a kustomization in the same directory lists `path` under patches."""
    d = os.path.dirname(path)
    if d not in _PATCH_CACHE:
        listed = set()
        for n in ("kustomization.yaml", "kustomization.yml"):
            kp = os.path.join(d, n)
            if os.path.exists(kp):
                try:
                    k = yaml.safe_load(open(kp, encoding="utf-8")) or {}
                except yaml.YAMLError:
                    k = {}
                for p in (k.get("patches") or []) + (k.get("patchesStrategicMerge") or []):
                    pp = p.get("path") if isinstance(p, dict) else p
                    if isinstance(pp, str):
                        listed.add(os.path.normpath(os.path.join(d, pp)))
        _PATCH_CACHE[d] = listed
    return os.path.normpath(path) in _PATCH_CACHE[d]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Checks a `moonseed launch k8s` manifest file the way Kubernetes would judge it.

usage: /usr/bin/python3 k8s_manifest_check.py FILE.k8s.yaml

Parses every document with PyYAML (Debian's python3-yaml) and checks what each kind needs:
apiVersion, kind and a DNS-1123 metadata.name; the StatefulSet's serviceName names a headless
Service; spec.selector.matchLabels within the pod template's labels (StatefulSet, Deployment);
the Service's selector matching the learner pods; ports as named ints in range; every
secretKeyRef naming a Secret and a key it holds; the ConfigMap volume naming the ConfigMap and
keys it holds, the script among them; probes on the learner. Prints each problem and exits 1
when there is any, else prints a summary and exits 0.
"""
import re
import sys

import yaml

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
API_VERSIONS = {"Secret": "v1", "ConfigMap": "v1", "Service": "v1", "StatefulSet": "apps/v1", "Deployment": "apps/v1"}


class Checker:
    def __init__(self, docs):
        self.docs = docs
        self.problems = []
        self.by_kind = {}
        for doc in docs:
            self.by_kind.setdefault(doc.get("kind"), []).append(doc)

    def fail(self, where, text):
        self.problems.append(f"{where}: {text}")

    def one(self, kind):
        found = self.by_kind.get(kind, [])
        if len(found) != 1:
            self.fail(kind, f"expected one {kind}, found {len(found)}")
            return None
        return found[0]

    def check_metadata(self, doc):
        kind = doc.get("kind")
        if kind not in API_VERSIONS:
            self.fail(str(kind), "unknown kind")
            return
        if doc.get("apiVersion") != API_VERSIONS[kind]:
            self.fail(kind, f"apiVersion {doc.get('apiVersion')!r}, expected {API_VERSIONS[kind]!r}")
        name = (doc.get("metadata") or {}).get("name")
        if not isinstance(name, str) or len(name) > 63 or not DNS1123.match(name):
            self.fail(kind, f"metadata.name {name!r} is not a DNS-1123 label")

    def check_ports(self, where, ports, number_key):
        if not ports:
            self.fail(where, "no ports")
        names = set()
        for port in ports or []:
            number = port.get(number_key)
            if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 65535:
                self.fail(where, f"{number_key} {number!r} is not an int in 1..65535")
            name = port.get("name")
            if not isinstance(name, str) or len(name) > 15 or not DNS1123.match(name):
                self.fail(where, f"port name {name!r} is not a valid port name")
            names.add(name)
        return names

    def check_workload(self, doc):
        where = f"{doc['kind']} {doc['metadata']['name']}"
        spec = doc.get("spec") or {}
        match = (spec.get("selector") or {}).get("matchLabels") or {}
        template = spec.get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not match:
            self.fail(where, "spec.selector.matchLabels is empty")
        for key, value in match.items():
            if labels.get(key) != value:
                self.fail(where, f"selector {key}={value} does not match the template's labels {labels}")
        if not isinstance(spec.get("replicas"), int) or spec["replicas"] < 1:
            self.fail(where, f"replicas {spec.get('replicas')!r}")
        pod = template.get("spec") or {}
        containers = pod.get("containers") or []
        if not containers:
            self.fail(where, "no containers")
        for container in containers:
            if not container.get("image"):
                self.fail(where, f"container {container.get('name')} has no image")
            self.check_secret_refs(where, container)
        return labels, pod, containers

    def check_secret_refs(self, where, container):
        secrets = {s["metadata"]["name"]: s for s in self.by_kind.get("Secret", [])}
        for env in container.get("env") or []:
            ref = ((env.get("valueFrom") or {}).get("secretKeyRef")) or None
            if ref is None:
                continue
            secret = secrets.get(ref.get("name"))
            if secret is None:
                self.fail(where, f"env {env.get('name')} names Secret {ref.get('name')!r}, which is not here")
                continue
            keys = set((secret.get("stringData") or {}).keys()) | set((secret.get("data") or {}).keys())
            if ref.get("key") not in keys:
                self.fail(where, f"env {env.get('name')} reads key {ref.get('key')!r}; the Secret has {sorted(keys)}")

    def check_config_volumes(self, where, pod, config_map):
        data = (config_map or {}).get("data") or {}
        volumes = [v for v in pod.get("volumes") or [] if "configMap" in v]
        if not volumes:
            self.fail(where, "no ConfigMap volume holds the script")
        for volume in volumes:
            ref = volume["configMap"]
            if config_map is None or ref.get("name") != config_map["metadata"]["name"]:
                self.fail(where, f"volume {volume.get('name')} names ConfigMap {ref.get('name')!r}, which is not here")
            for item in ref.get("items") or []:
                if item.get("key") not in data:
                    self.fail(where, f"volume item key {item.get('key')!r} is not in the ConfigMap")
        if not any(key.endswith(".lua") for key in data):
            self.fail("ConfigMap", "holds no .lua script")

    def check(self):
        for doc in self.docs:
            self.check_metadata(doc)
        service = self.one("Service")
        stateful = self.one("StatefulSet")
        deployment = self.one("Deployment")
        config_map = self.one("ConfigMap")
        self.one("Secret")
        if self.problems:
            return self.problems
        if service["spec"].get("clusterIP") != "None":
            self.fail("Service", "not headless (clusterIP: None)")
        self.check_ports("Service", service["spec"].get("ports"), "port")
        if stateful["spec"].get("serviceName") != service["metadata"]["name"]:
            self.fail("StatefulSet", f"serviceName {stateful['spec'].get('serviceName')!r} is not the headless Service")
        labels, pod, containers = self.check_workload(stateful)
        selector = service["spec"].get("selector") or {}
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            self.fail("Service", f"selector {selector} does not select the learner pods {labels}")
        for container in containers:
            names = self.check_ports("StatefulSet", container.get("ports"), "containerPort")
            for probe in ("readinessProbe", "livenessProbe"):
                port = ((container.get(probe) or {}).get("tcpSocket") or {}).get("port")
                if port is None:
                    self.fail("StatefulSet", f"{probe} is missing or not a tcpSocket probe")
                elif isinstance(port, str) and port not in names:
                    self.fail("StatefulSet", f"{probe} names port {port!r}, which the container lacks")
        self.check_config_volumes("StatefulSet", pod, config_map)
        self.check_workload(deployment)
        return self.problems


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    problems = Checker(docs).check()
    for problem in problems:
        print(f"k8s_manifest_check: {problem}")
    if problems:
        return 1
    print(f"k8s_manifest_check: {len(docs)} documents valid: {', '.join(d['kind'] for d in docs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

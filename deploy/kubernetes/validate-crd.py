"""Validates custom resources against the openAPIV3Schema of their CustomResourceDefinitions.

    python validate-crd.py CRDS.yaml MANIFESTS.yaml

Strict like `kubectl apply --validate=strict`: an unknown field fails, except under
x-kubernetes-preserve-unknown-fields. Prints one line per resource; exit 1 if any failed
or has no CRD. Runs in the kubernetes-validate venv (PyYAML, jsonschema).
"""
import sys

import jsonschema
import yaml


def strict(schema):
    """The schema with unknown fields refused wherever the API server would prune them."""
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) if k not in ("properties", "patternProperties") else {n: strict(s) for n, s in v.items()} for k, v in schema.items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out[key] = strict(schema[key])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in schema:
            out[key] = [strict(s) for s in schema[key]]
    if "properties" in schema and "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def main(crd_file, manifest_file):
    schemas = {}
    for crd in yaml.safe_load_all(open(crd_file)):
        if not crd or crd.get("kind") != "CustomResourceDefinition":
            continue
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = strict(version["schema"]["openAPIV3Schema"])
            # The API server takes these on every object whether the schema lists them or not.
            schema.setdefault("properties", {}).update({"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}})
            schemas[(f"{group}/{version['name']}", kind)] = schema
    failed = False
    for doc in yaml.safe_load_all(open(manifest_file)):
        if not doc:
            continue
        name = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        schema = schemas.get((doc.get("apiVersion"), doc.get("kind")))
        if schema is None:
            print(f"ERROR {name}: no CustomResourceDefinition for {doc.get('apiVersion')} {doc.get('kind')}")
            failed = True
            continue
        errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
        for e in errors:
            print(f"ERROR {name}: {'.'.join(map(str, e.path))}: {e.message}")
        if errors:
            failed = True
        else:
            print(f"INFO {name} passed against its CustomResourceDefinition")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(*sys.argv[1:3])

#!/usr/bin/python3
"""Validates Kubernetes manifests against the openAPIV3Schema of the CustomResourceDefinitions
beside this script, as strictly as `kubectl apply --validate=strict` does:

- the object's apiVersion and kind must name a version a CRD here serves;
- an object schema that lists `properties` and neither `additionalProperties` nor
  `x-kubernetes-preserve-unknown-fields: true` admits no other field (the API server prunes
  unknown fields, and strict validation turns each into an error);
- `metadata` is held to the ObjectMeta fields a manifest sets, with a DNS-1123 name;
- a mapping that repeats a key is an error (strict validation reports duplicate fields).

Usage: validate.py MANIFEST...   Exit 0 when every document of every file is valid; 1 with one
line per problem ("FILE: doc N (KIND NAME): PATH: MESSAGE") otherwise; 2 on bad usage.
"""

import copy
import glob
import os
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))

# The ObjectMeta fields a manifest may set (k8s.io/apimachinery/pkg/apis/meta/v1 ObjectMeta);
# the server fills in the rest.
OBJECT_META = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {
            "type": "string",
            "maxLength": 253,
            "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        },
        "generateName": {"type": "string"},
        "namespace": {"type": "string", "maxLength": 63, "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["name"],
}


class StrictLoader(yaml.SafeLoader):
    pass


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for field_node, _ in node.value:
        field = loader.construct_object(field_node, deep=deep)
        if field in seen:
            raise yaml.constructor.ConstructorError(
                None, None, "duplicate field %r" % (field,), field_node.start_mark)
        seen.add(field)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def strict(schema):
    """A copy of a CRD schema in which listed properties are the only ones allowed."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields", False)):
        out["additionalProperties"] = False
    return out


def load_crds():
    """(apiVersion, kind) -> strict schema, for every served version of every CRD here."""
    schemas = {}
    for path in sorted(glob.glob(os.path.join(HERE, "*.yaml"))):
        with open(path) as f:
            crd = yaml.load(f, Loader=StrictLoader)
        if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
            continue
        group = crd["spec"]["group"]
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if not version.get("served", True):
                continue
            schema = strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
            schema.setdefault("properties", {})["metadata"] = OBJECT_META
            schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
            schemas[("%s/%s" % (group, version["name"]), kind)] = schema
    return schemas


def where(error):
    path = "".join("[%d]" % p if isinstance(p, int) else ".%s" % p for p in error.absolute_path)
    return path or "."


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    schemas = load_crds()
    problems = []
    checked = 0
    for path in argv[1:]:
        try:
            with open(path) as f:
                docs = list(yaml.load_all(f, Loader=StrictLoader))
        except (OSError, yaml.YAMLError) as e:
            problems.append("%s: %s" % (path, str(e).replace("\n", " ")))
            continue
        for i, doc in enumerate(docs, 1):
            if doc is None:
                continue
            if not isinstance(doc, dict):
                problems.append("%s: doc %d: not a mapping" % (path, i))
                continue
            api, kind = doc.get("apiVersion"), doc.get("kind")
            name = (doc.get("metadata") or {}).get("name", "?") if isinstance(doc.get("metadata"), dict) else "?"
            label = "%s: doc %d (%s %s)" % (path, i, kind, name)
            schema = schemas.get((api, kind))
            if schema is None:
                problems.append("%s: no CRD here serves apiVersion %s kind %s" % (label, api, kind))
                continue
            validator = jsonschema.Draft7Validator(schema)
            for error in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
                problems.append("%s: %s: %s" % (label, where(error), error.message))
            checked += 1
    for p in problems:
        print(p)
    if not problems:
        print("%d objects valid" % checked)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
